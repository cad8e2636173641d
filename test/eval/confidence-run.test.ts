import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOutcomes, pairedReport } from "../../src/eval/paired-report.js";
import { scoredRecords } from "../../src/eval/record-stats.js";
import { readResults } from "../../src/eval/results-file.js";
import { runEval } from "../../src/eval/runner.js";
import { proposeThreshold } from "../../src/eval/stats/selective.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { evalScenario } from "./eval-fixtures.js";

/**
 * Self-consistency on open questions (synthetic), its vote share as the confidence: the
 * scripted model decides, per item, whether the k samples agree and whether they are right.
 */
const servers = useScriptedServers({ scenario: evalScenario({}) });
const N = 20;
const K = 10;
let tmp: string;
let input: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-confidence-"));
  input = path.join(tmp, "open.jsonl");
  // Synthetic items: open questions whose gold answers are words no decoy contains.
  const rows = Array.from({ length: N }, (_, i) => ({ id: `s${i}`, question: `Synthetic case ${i}: which keyword was assigned to this case?`, answer: `keyword${i}` }));
  await writeFile(input, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Per item i: how its samples answer, the j-th sample to arrive answering `answer(i, j)`. */
function samples(answer: (i: number, j: number) => string) {
  const seen = new Map<number, number>();
  return evalScenario({
    answerFor: (_req, caseText) => {
      const i = Number(/Synthetic case (\d+)/.exec(caseText)?.[1] ?? NaN);
      if (!Number.isInteger(i)) throw new Error("scripted model: no synthetic case in this prompt");
      const j = seen.get(i) ?? 0;
      seen.set(i, j + 1);
      return answer(i, j);
    },
  });
}

const gold = (i: number) => `keyword${i}`;
const decoy = (i: number, j: number) => `decoy ${String.fromCharCode(97 + (j % 26))}${i}`;

async function run(name: string, answer: (i: number, j: number) => string) {
  servers.model.setScenario(samples(answer));
  const out = path.join(tmp, name);
  const { summary } = await runEval({ dataset: "jsonl", input, method: "self-consistency", pipeline: { k: K }, concurrency: 2, out }, { config: servers.config({ MEDMMV_CACHE: "off" }), progress: null });
  return { summary, out };
}

describe("calibration and selective prediction on scripted runs", () => {
  it("informative: right exactly when the samples agree → AURC at its minimum, reliability on the diagonal", async () => {
    // Even items: all K samples give the gold answer (vote share 1, right). Odd: K different decoys (share 1/K, wrong).
    const { summary, out } = await run("informative", (i, j) => (i % 2 === 0 ? gold(i) : decoy(i, j)));
    expect(summary.accuracy).toBe(0.5);
    const c = summary.confidence!;
    expect(c.source).toBe("vote share");
    expect(c.n).toBe(N);
    expect(c.selective.aurc.value).toBeCloseTo(c.selective.optimalAurc, 12);
    expect(c.selective.excessAurc).toBeCloseTo(0, 12);
    expect(c.selective.atCoverage[0]!.accuracy.value).toBe(1); // the top half is the right half
    // On the diagonal up to the floor of a vote share (1/K): the wrong answers' bins sit at 0.1 with accuracy 0.
    for (const b of c.calibration.reliability) expect(Math.abs(b.accuracy - b.meanConfidence)).toBeLessThanOrEqual(1 / K + 1e-12);
    expect(c.calibration.ece.value).toBeLessThanOrEqual(0.05 + 1e-12);
    expect(c.calibration.brier.value).toBeCloseTo((N / 2) * (1 / K) ** 2 / N, 12);

    // eval calibrate's proposal: a 10 % target keeps exactly the agreeing half.
    const p = proposeThreshold(scoredRecords((await readResults(path.join(out, "results.jsonl"))).records), 0.1)!;
    expect([p.threshold, p.coverage, p.risk]).toEqual([1, 0.5, 0]);
    const md = await readFile(path.join(out, "summary.md"), "utf8");
    expect(md).toMatch(/## Calibration of vote share/);
    expect(md).toMatch(/\| AURC \(lower is better\)\s+\|\s+0\.\d{3} \|/);
  });

  it("uninformative: confident when wrong → ECE large, AURC far above its minimum; the paired report sees the difference", async () => {
    // Odd items: 2 gold samples among K − 2 different decoys (share 0.2, right). Even: K identical decoys (share 1, wrong).
    const { summary, out } = await run("uninformative", (i, j) => (i % 2 === 1 ? (j < 2 ? gold(i) : decoy(i, j)) : "decoy always"));
    expect(summary.accuracy).toBe(0.5);
    const c = summary.confidence!;
    // Bins: share 0.2 with accuracy 1, share 1 with accuracy 0 → ECE = ½·0.8 + ½·1 = 0.9.
    expect(c.calibration.ece.value).toBeCloseTo(0.9, 12);
    expect(c.calibration.ece.ci!.lo).toBeGreaterThan(0.5);
    expect(c.selective.aurc.value - c.selective.optimalAurc).toBeGreaterThan(0.4);
    expect(c.selective.atCoverage[0]!.accuracy.value).toBe(0);

    // Same items, same accuracy, opposite items right: the paired test counts 10 discordant each way.
    const informative = path.join(tmp, "informative");
    const paired = pairedReport(["informative", "uninformative"], [await loadOutcomes(informative), await loadOutcomes(out)], [summary, summary]);
    const e = paired.entries[0]!;
    expect(e.comparison.sharedItems).toBe(N);
    expect(e.comparison.difference!.value).toBe(0);
    expect(e.comparison.mcnemar).toMatchObject({ b: N / 2, c: N / 2 });
    expect(e.comparison.mcnemar.p).toBeCloseTo(1, 12);
  });
});
