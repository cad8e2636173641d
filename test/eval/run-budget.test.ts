import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { runEval, type EvalRunOptions } from "../../src/eval/runner.js";
import { readResults } from "../../src/eval/results-file.js";
import { RunBudget } from "../../src/eval/run-budget.js";
import { answerByItem, evalScenario, readItems } from "./eval-fixtures.js";

/**
 * `eval --max-cost` / `--max-tokens`: no item starts once what the run spent plus what its
 * items in flight are expected to spend reaches the limit; what runs finishes; `--resume`
 * (without the limit) finishes the run to the result an uninterrupted run has.
 */
const servers = useScriptedServers({ scenario: evalScenario({}) });
const PRICES = JSON.stringify({ "scripted-executor": { input: 2.5, cachedInput: 1.25, output: 10 }, "scripted-judge": { input: 1, output: 4 } });
let tmp: string;
let input: string;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-budget-"));
  input = path.join(tmp, "items.jsonl");
  // Our own synthetic items: twelve short multiple-choice questions.
  const rows = Array.from({ length: 12 }, (_, i) => ({ id: `b${i + 1}`, question: `Synthetic question ${i + 1}: which option is listed as ${"ABC"[i % 3]}?`, options: ["A. first", "B. second", "C. third"], answer: "ABC"[i % 3] }));
  await writeFile(input, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const config = () => servers.config({ MEDMMV_PRICES: PRICES, MEDMMV_LLM_BACKOFF_BASE_MS: "5" });
const opts = (out: string, extra: Partial<EvalRunOptions> = {}): EvalRunOptions => ({ dataset: "jsonl", input, method: "cot", concurrency: 4, out: path.join(tmp, out), ...extra });

describe("RunBudget", () => {
  it("runs one item until one has finished, then admits while spent + in flight × the mean stays under the limit", () => {
    const b = new RunBudget({ maxCostUsd: 1 }, []);
    const item = { tokens: 10, costUsd: 0.3 };
    expect(b.admit()).toBe("start");
    b.started();
    expect(b.admit()).toBe("wait"); // nothing is known yet about what an item costs
    b.ended(item);
    expect(b.admit()).toBe("start"); // 0.3 spent + 1 × 0.3
    b.started();
    expect(b.admit()).toBe("start"); // 0.3 + 2 × 0.3 = 0.9
    b.started();
    expect(b.admit()).toBe("wait"); // 0.3 + 3 × 0.3 = 1.2: wait for what runs
    b.ended(item);
    expect(b.admit()).toBe("wait"); // 0.6 + 2 × 0.3
    b.ended(item);
    expect(b.admit()).toBe("stop"); // 0.9 + 1 × 0.3, nothing in flight
    expect(b.stopped).toBe(true);
    expect(b.total()).toEqual({ tokens: 30, costUsd: expect.closeTo(0.9, 9) });
  });

  it("counts what the run's earlier sessions spent, and admits everything without a limit", () => {
    expect(new RunBudget({ maxTokens: 100 }, [{ tokens: 60, costUsd: 0 }, { tokens: 50, costUsd: 0 }]).admit()).toBe("stop");
    const free = new RunBudget({}, []);
    free.started();
    expect(free.admit()).toBe("start");
  });
});

describe("eval --max-cost and --resume", () => {
  it("stops within one item's cost of the budget, and --resume finishes to the uninterrupted result", async () => {
    const items = await readItems("jsonl", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it) => (Number(it.id.slice(1)) % 4 === 0 ? "wrong" : "gold")) }));
    const whole = await runEval(opts("whole"), { config: config(), progress: null });
    expect(whole.summary.records).toBe(12);
    const costs = (await readResults(path.join(whole.dir, "results.jsonl"))).records.map((r) => r.usage.costUsd);
    const mean = costs.reduce((a, b) => a + b, 0) / costs.length;
    const maxItem = Math.max(...costs);
    expect(mean).toBeGreaterThan(0);

    const budget = mean * 5.5;
    const cut = await runEval(opts("cut", { maxCostUsd: budget }), { config: config(), progress: null });
    expect(cut.budgetReached).toBe(true);
    expect(cut.summary.records).toBeLessThan(12);
    expect(cut.summary.complete).toBe(false);
    expect(Math.abs(cut.spent.costUsd - budget)).toBeLessThanOrEqual(maxItem);
    const cutRecords = (await readResults(path.join(cut.dir, "results.jsonl"))).records;
    expect(cutRecords.reduce((a, r) => a + r.usage.costUsd, 0)).toBeCloseTo(cut.spent.costUsd, 9);

    const resumed = await runEval(opts("cut", { resume: true }), { config: config(), progress: null });
    expect(resumed.budgetReached).toBe(false);
    expect(resumed.summary.complete).toBe(true);
    expect(resumed.written).toBe(12 - cutRecords.length);
    const answers = async (dir: string) => (await readResults(path.join(dir, "results.jsonl"))).records.map((r) => [r.id, r.answer?.option ?? null, r.correct] as const).sort();
    expect(await answers(resumed.dir)).toEqual(await answers(whole.dir));
    expect(resumed.summary.records).toBe(whole.summary.records);
    expect(resumed.summary.correct).toBe(whole.summary.correct);
  });

  it("a cost limit without prices for the models is refused before anything runs", async () => {
    await expect(runEval(opts("unpriced", { maxCostUsd: 1 }), { config: servers.config(), progress: null })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("--max-tokens stops the same way", async () => {
    const items = await readItems("jsonl", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    const cut = await runEval(opts("tokens", { maxTokens: 1 }), { config: config(), progress: null });
    // The first item starts (nothing was spent), and shows that one more would pass the limit.
    expect(cut.summary.records).toBe(1);
    expect(cut.budgetReached).toBe(true);
  });
});
