import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readResults, ResultsWriter } from "../../src/eval/results-file.js";
import { resultRecord } from "./eval-fixtures.js";

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-results-"));
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

let n = 0;
const file = () => path.join(tmp, `results-${++n}.jsonl`);

const rec = resultRecord;

describe("readResults", () => {
  it("a missing file is an empty result set", async () => {
    expect(await readResults(path.join(tmp, "nope.jsonl"))).toEqual({ records: [], lines: 0, invalidLines: 0, tornTail: false });
  });

  it("keeps the last record per (id, run), in first-seen order, and skips a torn last line", async () => {
    const f = file();
    const lines = [rec("a", 0, "failed"), rec("b", 0), rec("a", 1), rec("a", 0, "completed", { attempts: 2 })].map((r) => JSON.stringify(r));
    await writeFile(f, lines.join("\n") + "\n" + '{"id":"c","run":0,"sta');
    const r = await readResults(f);
    expect(r.records.map((x) => [x.id, x.run, x.status])).toEqual([
      ["a", 0, "completed"],
      ["b", 0, "completed"],
      ["a", 1, "completed"],
    ]);
    expect(r.records[0]!.attempts).toBe(2);
    expect(r).toMatchObject({ lines: 4, invalidLines: 0, tornTail: true });
  });

  it("counts garbage lines in the middle as invalid and goes on", async () => {
    const f = file();
    await writeFile(f, [JSON.stringify(rec("a", 0)), "not json", JSON.stringify({ id: 3, run: 0 }), "", JSON.stringify(rec("b", 0))].join("\n") + "\n");
    const r = await readResults(f);
    expect(r.records.map((x) => x.id)).toEqual(["a", "b"]);
    expect(r.invalidLines).toBe(2);
  });

  it("a complete last record without its newline still counts", async () => {
    const f = file();
    await writeFile(f, JSON.stringify(rec("a", 0)) + "\n" + JSON.stringify(rec("b", 0)));
    const r = await readResults(f);
    expect(r.records.map((x) => x.id)).toEqual(["a", "b"]);
    expect(r.tornTail).toBe(false);
  });
});

describe("ResultsWriter", () => {
  it("cuts a torn tail before appending, so the next record is intact", async () => {
    const f = file();
    await writeFile(f, JSON.stringify(rec("a", 0)) + "\n" + '{"id":"b","ru');
    const w = await ResultsWriter.open(f);
    await w.append(rec("c", 0));
    await w.close();
    expect(await readFile(f, "utf8")).toBe(JSON.stringify(rec("a", 0)) + "\n" + JSON.stringify(rec("c", 0)) + "\n");
  });

  it("ends a complete unterminated last record with a newline instead of cutting it", async () => {
    const f = file();
    await writeFile(f, JSON.stringify(rec("a", 0)));
    const w = await ResultsWriter.open(f);
    await w.append(rec("b", 0));
    await w.close();
    expect((await readResults(f)).records.map((x) => x.id)).toEqual(["a", "b"]);
  });

  it("concurrent appends never interleave; each is on disk when its promise resolves", async () => {
    const f = file();
    const w = await ResultsWriter.open(f);
    const big = "x".repeat(50_000);
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        await w.append(rec(`item-${i}`, 0, "completed", { warnings: [big] }));
        // Already readable by another process at this point.
        const text = await readFile(f, "utf8");
        expect(text).toContain(`"id":"item-${i}"`);
      }),
    );
    await w.close();
    const r = await readResults(f);
    expect(r.records).toHaveLength(40);
    expect(r.invalidLines).toBe(0);
  });
});
