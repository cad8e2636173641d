import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSummary, compareSummaries, loadSummary, summaryMarkdown } from "../../src/eval/report.js";
import { markdownTable } from "../../src/eval/report-table.js";
import type { ResultRecord } from "../../src/eval/results-file.js";
import { resultRecord, runManifest as manifest } from "./eval-fixtures.js";

const u = (llmCalls: number): ResultRecord["usage"] => ({ llmCalls, searchCalls: 0, promptTokens: 1000, completionTokens: 200, costUsd: 0.002, wallMs: 4000, byAgent: {} });

/** MedMMV: 3 of 4 right (Skeletal 2/2, Nervous 1/2), RGM 0.5 each, 1 knowledge hallucination per item. */
const medmmv = [0, 1, 2, 3].map((i) =>
  resultRecord(`MM-${i}`, 0, "completed", {
    method: "medmmv",
    correct: i !== 3,
    strata: { body_system: i < 2 ? "Skeletal" : "Nervous" },
    stability: { answers: ["A", "B"], rgm: 0.5, entropy: 1 },
    cu: { pathId: "path-1", cu: 1.5, evidence: 0.9, coherence: 0.8, repairPenalty: 0.2, repairs: 1 },
    hallucinations: { visual: 0, knowledge: 1, reasoning: 0, total: 1, resolved: 1 },
    usage: u(20),
  }),
);
/** CoT: 1 of 4 right (Skeletal 1/2, Nervous 0/2), one call each. */
const cot = [0, 1, 2, 3].map((i) => resultRecord(`MM-${i}`, 0, "completed", { correct: i === 0, strata: { body_system: i < 2 ? "Skeletal" : "Nervous" }, usage: u(1) }));

describe("compareSummaries", () => {
  const a = buildSummary(medmmv, manifest("medmmv", "medmmv"), { planned: 4, complete: true });
  const b = buildSummary(cot, manifest("cot", "cot"), { planned: 4, complete: true });
  const table = compareSummaries([a, b], ["mmv-run", "cot-run"]);
  const row = (name: string) =>
    table
      .split("\n")
      .find((l) => l.startsWith(`| ${name} `))
      ?.split("|")
      .slice(2, -1)
      .map((c) => c.trim());

  it("puts the folders side by side with deltas against the first", () => {
    expect(table.split("\n")[0]).toMatch(/^\|\s+\|\s+mmv-run \|\s+cot-run \|$/);
    expect(row("method")).toEqual(["medmmv", "cot"]);
    // 75% vs 25%: −50 percentage points.
    // With Wilson intervals: 3/4 → [30.1, 95.4], 1/4 → [4.6, 69.9].
    expect(row("accuracy (%)")).toEqual(["75.0 [30.1–95.4]", "25.0 [4.6–69.9] (-50.0)"]);
    // Skeletal 100 vs 50; Nervous 50 vs 0.
    expect(row("  body_system = Skeletal")).toEqual(["100.0 (n=2)", "50.0 (n=2) (-50.0)"]);
    expect(row("  body_system = Nervous")).toEqual(["50.0 (n=2)", "0.0 (n=2) (-50.0)"]);
    expect(row("RGM")).toEqual(["0.500", "—"]);
    // CoT has no detector: its hallucinations are not "0", they are not measured.
    expect(row("hallucinations / item")).toEqual(["1.00", "—"]);
    expect(row("  knowledge")).toEqual(["1.00", "—"]);
    expect(row("model calls / item")).toEqual(["20.0", "1.0 (-19.0)"]);
    expect(row("tokens / item")).toEqual(["1200", "1200 (+0)"]);
    expect(row("cost / item (USD)")).toEqual(["0.0020", "0.0020 (+0.0000)"]);
    expect(row("wall / item (s)")).toEqual(["4.0", "4.0 (+0.0)"]);
    expect(table).not.toMatch(/Incomplete/);
  });

  it("shows ± std for repeated runs and flags incomplete folders and mixed inputs", () => {
    const twoRuns = buildSummary([...medmmv, ...medmmv.map((r, i) => ({ ...r, run: 1, correct: i < 2 }))], manifest("medmmv", "medmmv"), { planned: 8, complete: false });
    const other = buildSummary(cot, { ...manifest("cot", "cot"), input: "/data/other.jsonl" }, { complete: true });
    const t = compareSummaries([twoRuns, other], ["x", "y"]);
    // Runs: 3/4 and 2/4 → 62.5 ± sqrt(((.75−.625)² + (.5−.625)²)/1)·100 = 17.7.
    expect(t).toContain("| accuracy (%)");
    expect(t).toMatch(/62\.5 \[[\d.]+–[\d.]+\] ± 17\.7 sd/);
    expect(t).toMatch(/25\.0 \[4\.6–69\.9\] \(-37\.5\)/);
    expect(t).toMatch(/Incomplete runs: x\./);
    expect(t).toMatch(/different inputs/);
  });

  it("adds reliability rows when any folder has ratings", () => {
    const rated = buildSummary(
      cot.map((r) => ({ ...r, ratings: [{ rater: "j", truthfulness: 4, informativeness: 5, consistency: null, txi: 80, rel: 0.8 }] })),
      manifest("cot", "cot"),
      { complete: true },
    );
    const t = compareSummaries([rated, b], ["rated", "plain"]);
    expect(t).toMatch(/\| T×I\s+\|\s+80\.0 \|\s+— \|/);
    expect(t).toMatch(/\| CMHR\s+\|\s+20\.0 \|/);
  });
});

describe("summary.md and folders without summary.json", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-report-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("summaryMarkdown carries the headline numbers, strata, hallucinations and configuration", () => {
    const s = buildSummary(medmmv, manifest("medmmv", "medmmv (no-hd)"), { planned: 4, complete: true, details: { copBase: 0, copBaseSource: "detected", copBaseReason: "cop = 0 in record 3" } });
    const md = summaryMarkdown(s);
    expect(md).toContain("# Eval: medmmv (no-hd) on medxpertqa (test.jsonl)");
    expect(md).toMatch(/\| accuracy \(%\)\s+\| 75\.0 \[30\.1–95\.4\]\s+\|/);
    // items, then item-runs (one run: the same).
    expect(md).toMatch(/\| Skeletal\s+\|\s+2 \|\s+2 \|\s+100\.0 \|/);
    expect(md).toMatch(/\| knowledge \|\s+4 \|\s+1\.00 \|/);
    expect(md).toContain("- copBaseReason: cop = 0 in record 3");
    expect(md).toMatch(/rollout sha256:0000/);
  });

  it("loadSummary recomputes from results.jsonl and eval.json when the run never wrote its summary", async () => {
    await writeFile(path.join(dir, "eval.json"), JSON.stringify(manifest("cot", "cot")));
    await writeFile(path.join(dir, "results.jsonl"), cot.map((r) => JSON.stringify(r)).join("\n") + "\n" + '{"id":"MM-9","ru');
    const s = await loadSummary(dir);
    expect(s).toMatchObject({ label: "cot", items: 4, accuracy: 0.25, complete: false });
  });

  it("loadSummary on a folder that is not an eval folder says so", async () => {
    await expect(loadSummary(path.join(dir, "missing"))).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("markdownTable pads columns and right-aligns numbers", () => {
    expect(markdownTable(["a", "n"], [["xx", "1"], ["y", "10"]], ["l", "r"])).toBe(["| a   |   n |", "|-----|----:|", "| xx  |   1 |", "| y   |  10 |"].join("\n"));
  });
});
