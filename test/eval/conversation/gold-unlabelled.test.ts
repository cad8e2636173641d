import path from "node:path";
import { writeFile } from "node:fs/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { readFile } from "node:fs/promises";
import { runConversationEval } from "../../../src/eval/conversation/run-conversation-eval.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { fakeImages } from "../eval-fixtures.js";
import { conversationScenario } from "./conversation-scenario.js";

/** A gold answer the labeller cannot label is never a silent no-match: records, summary.json and summary.md say so. */
const servers = useScriptedServers({ scenario: conversationScenario() });
const tmp = useTempDir("medmmv-gold-unlabelled-");

describe("gold answers that name no category", () => {
  let dir: string;
  beforeAll(async () => {
    dir = tmp();
    await fakeImages(path.join(dir, "images"), ["g1.jpeg"]);
    const turns = [
      ["Is the image of sufficient quality?", "The image quality is sufficient for analysis."],
      ["Is the region suitable for cell analysis?", "See the attached report."], // names no category
      ["Are there abnormalities?", "Yes, there is a malignancy."],
      ["Which cell type is proliferating?", "Myeloblasts are proliferating."],
      ["What is the diagnosis?", "Acute myeloid leukemia."],
    ];
    const conversations = turns.flatMap(([q, a], i) => [{ from: "human", value: i === 0 ? `<image>\n${q}` : q }, { from: "gpt", value: a }]);
    await writeFile(path.join(dir, "one.json"), JSON.stringify([{ id: "g1", image: "g1.jpeg", conversations, diagnosis: "adequate_AML" }], null, 4));
  });

  it("are counted per order, marked on the turn and warned about on the record", async () => {
    servers.model.setScenario(conversationScenario());
    const out = path.join(dir, "out");
    const { summary } = await runConversationEval({ dataset: "drllava", input: path.join(dir, "one.json"), images: path.join(dir, "images"), method: "cot", orders: ["si", "df"], out, seed: 1 }, { config: servers.config() });
    for (const o of ["si", "df"] as const) expect(summary.conversation?.[o]?.goldUnlabelled, o).toBe(1);
    expect(summary.dataset.warnings).toBe(2);
    const md = await readFile(path.join(out, "summary.md"), "utf8");
    expect(md).toContain("Gold answers that name no category of their step (scored against the record's path instead; the records' warnings name each turn): si: 1, df: 1.");
  });
});
