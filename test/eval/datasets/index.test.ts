import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DATASET_NAMES, getAdapter } from "../../../src/eval/datasets/index.js";

describe("getAdapter", () => {
  it("returns a fresh adapter of the named dataset for every name", () => {
    expect([...DATASET_NAMES].sort()).toEqual(["clinhallu", "healthbench", "jsonl", "medframeqa", "medmcqa", "medqa", "medxpertqa", "pathvqa", "vqa-rad"]);
    for (const name of DATASET_NAMES) {
      const a = getAdapter(name);
      expect(a.name).toBe(name);
      expect(getAdapter(name)).not.toBe(a);
    }
  });

  it("refuses unknown names, listing the valid ones", () => {
    expect(() => getAdapter("toString")).toThrow(/unknown dataset.*medxpertqa/);
    expect(() => getAdapter("mimic")).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
  });

  it("throws INVALID_INPUT naming the file when the input cannot be read", async () => {
    const missing = path.join(tmpdir(), "medmmv-does-not-exist.jsonl");
    const iter = getAdapter("medqa").read(missing, {})[Symbol.asyncIterator]();
    await expect(iter.next()).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining(missing) });
  });

  it("refuses a file that starts like a JSON array but is not one", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-idx-"));
    try {
      const file = path.join(dir, "broken.json");
      await writeFile(file, '\uFEFF  [{"qid": 1},');
      const iter = getAdapter("vqa-rad").read(file, {})[Symbol.asyncIterator]();
      await expect(iter.next()).rejects.toMatchObject({ code: "INVALID_INPUT" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
