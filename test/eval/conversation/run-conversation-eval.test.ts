import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { runConversationEval } from "../../../src/eval/conversation/run-conversation-eval.js";
import { compareSummaries, loadSummary } from "../../../src/eval/report.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { fakeImages } from "../eval-fixtures.js";
import { conversationScenario as scenario, recordsOf } from "./conversation-scenario.js";

const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));

const servers = useScriptedServers({ scenario: scenario() });
const tmp = useTempDir("medmmv-conv-eval-");
let dir: string;
let images: string;
beforeAll(async () => {
  dir = tmp();
  images = path.join(dir, "images");
  await fakeImages(images, ["test1.jpeg", "test2.jpeg", "test3.jpeg"]);
});

const records = async (out: string) => (await recordsOf(out)).records;
const DRLLAVA = path.join(FIXTURES, "drllava-synthetic.json");

describe("conversation eval over the scripted model", () => {
  for (const method of ["cot", "medmmv"] as const) {
    it(`${method}: gold answers score A_Q = A_C = A_D = 1 and H_cc = 0 (both definitions) in every order`, async () => {
      servers.model.setScenario(scenario());
      const out = path.join(dir, `consistent-${method}`);
      const { summary } = await runConversationEval(
        { dataset: "drllava", input: DRLLAVA, images, method, orders: ["si", "df", "ii", "ii-sample"], pipeline: { k: 1, maxRepairs: 1 }, out, seed: 3 },
        { config: servers.config() },
      );
      // The scripted model answers with the records' gold answers, word for word.
      for (const order of ["si", "df", "ii", "ii-sample"] as const)
        expect(summary.conversation?.[order], order).toMatchObject({ aQ: 1, aC: 1, aD: 1, hCC: 0, hCCReference: 0, conversations: 3, failed: 0 });
      expect(summary).toMatchObject({ items: 12, failed: 0, accuracy: 1 });
      const recs = await records(out);
      expect(recs.map((r) => r.id).sort()).toEqual(["test1@df", "test1@ii", "test1@ii-sample", "test1@si", "test2@df", "test2@ii", "test2@ii-sample", "test2@si", "test3@df", "test3@ii", "test3@ii-sample", "test3@si"]);
      const df = recs.find((r) => r.id === "test2@df")!;
      expect(df.conversation.turns.map((t) => t.step)).toEqual(["diagnosis", "proliferation", "abnormality", "cell-quality", "image-quality"]);
      expect(df.conversation.turns.every((t) => t.expectedFrom === "gold-answer")).toBe(true);
      expect(df.answer?.text).toBe("Inconclusive because of low quality.");
      // medmmv checks every turn's claims (3 items × 3 orders × 5 turns) besides the pipeline's own passes; cot checks nothing.
      if (method === "medmmv") {
        expect(servers.model.stats().byAgent["hd-supervisor"]).toBeGreaterThanOrEqual(45);
        expect(servers.model.stats().byAgent["rollout"]).toBe(3);
        // ... but the records do not count those verdicts, so their zeros are not shown as a measurement.
        expect(await readFile(path.join(out, "summary.md"), "utf8")).toMatch(/## Hallucinations \(flagged claims, all HD attempts\)\s+Not measured: a conversation eval does not count flagged claims\./);
        expect(compareSummaries([summary], ["medmmv"])).toMatch(/\| hallucinations \/ item\s*\|\s*— \|/);
      } else expect(servers.model.stats().byAgent["hd-supervisor"] ?? 0).toBe(0);
    });
  }

  it("a model that answers with letters only is on no valid path in the reference's H_cc, and on none of ours", async () => {
    servers.model.setScenario(scenario(() => "B."));
    const out = path.join(dir, "letters-only");
    const { summary } = await runConversationEval({ dataset: "drllava", input: DRLLAVA, images, method: "cot", orders: ["si", "df"], out, seed: 3 }, { config: servers.config() });
    for (const order of ["si", "df"] as const) expect(summary.conversation?.[order]).toMatchObject({ aQ: 0, aC: 0, aD: 0, hCC: 0, hCCReference: 1 });
  });

  it("--hypothesis rq-w puts the previous step's wrong conclusion before each next question, turn by turn", async () => {
    servers.model.setScenario(scenario());
    const out = path.join(dir, "probe-rq-w");
    const { summary } = await runConversationEval({ dataset: "drllava", input: DRLLAVA, images, method: "cot", orders: ["si"], hypothesis: "rq-w", out, seed: 3 }, { config: servers.config() });
    expect(summary.label).toMatch(/\[rq-w\]$/);
    const turns = (await records(out)).find((r) => r.id === "test1@si")!.conversation.turns;
    expect(turns[0]!.hypothesis).toBeUndefined();
    turns.slice(1).forEach((t, i) => {
      const previous = turns[i]!;
      expect(t.hypothesis).toMatchObject({ kind: "rq-w", step: previous.step });
      expect(t.hypothesis!.category).not.toBe(previous.expected);
      expect(t.question.startsWith(t.hypothesis!.statement)).toBe(true);
    });
  });

  it("a conversation that contradicts an earlier turn is flagged on that turn, and the metrics say so", async () => {
    // The consistent run to compare with, in its own folder, so this test runs on its own too.
    servers.model.setScenario(scenario());
    const consistent = path.join(dir, "contradiction-baseline");
    await runConversationEval({ dataset: "drllava", input: DRLLAVA, images, method: "cot", out: consistent, seed: 3 }, { config: servers.config() });
    // Record 1's model says multiple myeloma after calling the proliferating cells myeloblasts.
    servers.model.setScenario(scenario((image, step) => (image === "test1.jpeg" && step === "diagnosis" ? "Multiple myeloma." : undefined)));
    const out = path.join(dir, "contradiction");
    const { summary } = await runConversationEval({ dataset: "conversation", input: path.join(FIXTURES, "conversation-synthetic.jsonl"), images, method: "cot", orders: ["si", "df"], out }, { config: servers.config() });
    const recs = await records(out);
    const si = recs.find((r) => r.id === "conv-aml@si")!;
    expect(si.conversation.turns.map((t) => [t.step, t.category, t.correct, t.contextConflict])).toEqual([
      ["image-quality", "high", true, false],
      ["cell-quality", "adequate", true, false],
      ["abnormality", "abnormal", true, false],
      ["proliferation", "blasts", true, false],
      ["diagnosis", "mm", false, true],
    ]);
    // df reverses the sequence: asked first, "mm" conflicts with nothing yet; the proliferation
    // answer (blasts) asked next is the one that leaves S, and the conversation stays off it.
    const df = recs.find((r) => r.id === "conv-aml@df")!;
    expect(df.conversation.turns.map((t) => [t.step, t.contextConflict])).toEqual([
      ["diagnosis", false],
      ["proliferation", true],
      ["abnormality", true],
      ["cell-quality", true],
      ["image-quality", true],
    ]);
    // Hand-computed: 2 conversations per order; conv-aml 4 of 5 right with a conflict, conv-blood all right.
    expect(summary.conversation?.si).toMatchObject({ aQ: 9 / 10, aC: 1 / 2, aD: 1 / 2, hCC: 1 / 2 });
    expect(summary.conversation?.df).toMatchObject({ aQ: 9 / 10, aC: 1 / 2, aD: 1 / 2, hCC: 1 / 2 });
    expect(summary.conversation?.ii).toBeUndefined();

    // eval report shows the folders' conversation metrics side by side.
    const table = compareSummaries([await loadSummary(consistent), await loadSummary(out)], ["consistent", "contradiction"]);
    expect(table).toMatch(/\| H_cc reference si \(%\)\s*\|\s*0\.0 \|\s*50\.0 \(\+50\.0\) \|/);
    expect(table).toMatch(/\| H_cc labelled-only si \(%\)\s*\|\s*0\.0 \|\s*50\.0 \(\+50\.0\) \|/);
    expect(table).toMatch(/\| A_C df \(%\)\s*\|\s*100\.0 \|\s*50\.0 \(-50\.0\) \|/);
    expect(table).toMatch(/\| A_Q ii \(%\)\s*\|\s*100\.0 \|\s*— \|/);
    expect(await readFile(path.join(out, "summary.md"), "utf8")).toMatch(/## Conversations \(Dr-LLaVA metrics, %\)[\s\S]*\| si\s*\|\s*2 \|\s*10 \|\s*90\.0 \|\s*50\.0 \|\s*50\.0 \|\s*50\.0 \|/);
  });
});
