import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { expectedFromGold, readConversationJsonl, readDrLlava } from "../../../src/eval/conversation/datasets.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import type { ConversationItem } from "../../../src/eval/conversation/types.js";
import type { ItemError } from "../../../src/eval/datasets/types.js";
import { collect as all, useTempDir } from "../datasets/dataset-kit.js";
import { fakeImages } from "../eval-fixtures.js";

const FIXTURES = fileURLToPath(new URL("./fixtures/", import.meta.url));
const tmp = useTempDir("medmmv-conv-ds-");
let dir: string;
beforeAll(async () => {
  dir = tmp();
  await fakeImages(dir, ["test1.jpeg", "test2.jpeg", "test3.jpeg"]);
});
const ok = (x: ConversationItem | ItemError): ConversationItem => {
  if ("error" in x) throw new Error(x.error.message);
  return x;
};

describe("--dataset drllava", () => {
  it("reads the generator's records: five turns on the bone-marrow steps, <image> removed, expected labels from the diagnosis", async () => {
    const items = (await all(readDrLlava(path.join(FIXTURES, "drllava-synthetic.json"), { imagesDir: dir }))).map(ok);
    expect(items.map((x) => x.item.id)).toEqual(["test1", "test2", "test3"]);
    const aml = items[0]!;
    expect(aml.turns.map((t) => [t.step, t.expected])).toEqual([
      ["image-quality", "high"],
      ["cell-quality", "adequate"],
      ["abnormality", "abnormal"],
      ["proliferation", "blasts"],
      ["diagnosis", "aml"],
    ]);
    expect(aml.turns[0]!.question).toBe("Is this image of sufficient quality for analysis?");
    expect(items[1]!.turns[0]!.question).toBe("Is this image of sufficient quality for analysis?"); // the suffix form
    expect(items[1]!.turns.map((t) => t.expected)).toEqual(["low", "blood", "inadequate", "inadequate", "inconclusive"]);
    expect(items[2]!.item.gold.text).toBe("healthy");
    expect(aml.item.case.pathway).toBe("bone-marrow");
    expect(aml.item.case.images?.[0]).toMatchObject({ id: "test1.jpeg", path: path.join(dir, "test1.jpeg") });
  });

  it("a record with an unknown diagnosis, a short conversation or a missing image is an item error naming the problem", async () => {
    const file = path.join(dir, "bad.json");
    const good = JSON.parse((await import("node:fs")).readFileSync(path.join(FIXTURES, "drllava-synthetic.json"), "utf8")) as Array<Record<string, unknown>>;
    await writeFile(
      file,
      JSON.stringify([
        { ...good[0], id: "d1", diagnosis: "lymphoma" },
        { ...good[0], id: "d2", conversations: (good[0]!["conversations"] as unknown[]).slice(0, 8) },
        { ...good[0], id: "d3", image: "nope.jpeg" },
      ]),
    );
    const out = await all(readDrLlava(file, { imagesDir: dir }));
    expect(out.map((x) => ("error" in x ? x.error.message : "ok"))).toEqual([
      expect.stringMatching(/diagnosis "lymphoma" is not one of adequate_normal, adequate_aml/),
      expect.stringMatching(/must be 5 human\/gpt pairs/),
      expect.stringMatching(/image file\(s\) nope\.jpeg/),
    ]);
  });
});

describe("--dataset conversation", () => {
  it("reads {id, images?, notes?, pathway, turns} and checks steps and expected categories against the pathway", async () => {
    const items = (await all(readConversationJsonl(path.join(FIXTURES, "conversation-synthetic.jsonl"), { imagesDir: dir }))).map(ok);
    expect(items.map((x) => [x.item.id, x.turns.length, x.item.gold.text])).toEqual([
      ["conv-aml", 5, "aml"],
      ["conv-blood", 5, "inconclusive"],
    ]);
    expect(items[0]!.item.case.notes).toBe("Synthetic bone-marrow aspirate description.");

    const file = path.join(dir, "bad.jsonl");
    await writeFile(
      file,
      [
        { id: "b1", pathway: "lung", turns: [{ question: "q", step: "x", expected: "y" }] },
        { id: "b2", pathway: "bone-marrow", turns: [{ question: "q", step: "cell-count", expected: "y" }] },
        { id: "b3", pathway: "bone-marrow", turns: [{ question: "q", step: "diagnosis", expected: "flu" }] },
        { id: "b4", pathway: "bone-marrow", turns: [] },
      ]
        .map((l) => JSON.stringify(l))
        .join("\n"),
    );
    const out = await all(readConversationJsonl(file, {}));
    expect(out.map((x) => ("error" in x ? x.error.message : "ok"))).toEqual([
      'unknown pathway "lung"; known pathways: bone-marrow',
      'turns[0].step "cell-count" is not a step of pathway "bone-marrow" (steps: image-quality, cell-quality, abnormality, proliferation, diagnosis)',
      'turns[0].expected "flu" is not a category of step "diagnosis" (categories: healthy, aml, mm, inconclusive)',
      "`turns` must be a non-empty array of {question, step, expected}",
    ]);
  });
});

describe("expected labels from the gold answer (the reference's rule)", () => {
  const bm = loadPathway("bone-marrow");
  const dx = bm.steps.find((s) => s.id === "diagnosis")!;
  it("the gold answer's label is expected; where it names no category the record's path stands in, with a warning", () => {
    const warnings: string[] = [];
    expect(expectedFromGold(dx, "There is evidence suggestive of acute myeloid leukemia.", "aml", 4, warnings)).toEqual({ expected: "aml", expectedFrom: "gold-answer" });
    expect(warnings).toEqual([]);
    expect(expectedFromGold(dx, "See the attached report.", "aml", 4, warnings)).toEqual({ expected: "aml", expectedFrom: "path", goldUnlabelled: true });
    expect(expectedFromGold(dx, "Multiple myeloma.", "aml", 4, warnings)).toEqual({ expected: "mm", expectedFrom: "gold-answer" });
    expect(warnings).toEqual([
      "turn 5 (diagnosis): the gold answer names no category; scored against the record's path (aml)",
      "turn 5 (diagnosis): the gold answer is labelled mm, the record's path says aml; scored against the gold answer",
    ]);
  });
});
