import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { getAdapter, isItemError, type EvalItem, type ItemError } from "../../../src/eval/datasets/index.js";
import { clippedMean, rubricScore, scoreExample } from "../../../src/eval/healthbench/scoring.js";
import { computeHealthBench } from "../../../src/eval/healthbench/summary.js";
import { HEALTHBENCH_GOLD } from "../../../src/eval/healthbench/types.js";
import { pairedFigures } from "../../../src/eval/paired-figures.js";
import { readResults } from "../../../src/eval/results-file.js";
import { runEval } from "../../../src/eval/runner.js";
import { GRADER_SCRIPT, HEALTHBENCH_DIR, healthbenchScenario, readExamples } from "../../support/healthbench-scenario.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { resultRecord } from "../eval-fixtures.js";

const servers = useScriptedServers({ scenario: healthbenchScenario() });
const tmp = useTempDir("medmmv-healthbench-");
const FULL = path.join(HEALTHBENCH_DIR, "healthbench-synthetic.jsonl");

async function read(file: string): Promise<Array<EvalItem | ItemError>> {
  const out: Array<EvalItem | ItemError> = [];
  for await (const x of getAdapter("healthbench").read(file, {})) out.push(x);
  return out;
}

describe("--dataset healthbench reads the published JSONL as is", () => {
  it("the full set, hard and consensus files: the last user turn is the question, the turns before it the notes, the rubric and tags on the item", async () => {
    for (const f of ["healthbench-synthetic.jsonl", "healthbench-hard-synthetic.jsonl", "healthbench-consensus-synthetic.jsonl"]) {
      const items = await read(path.join(HEALTHBENCH_DIR, f));
      const examples = readExamples(f);
      expect(items.map((x) => x.id)).toEqual(examples.map((e) => e.prompt_id));
      for (const [i, x] of items.entries()) {
        if (isItemError(x)) throw new Error(x.error.message);
        expect(x.case.question).toBe(examples[i]!.prompt.at(-1)!.content);
        expect(x.healthbench).toEqual({ promptId: examples[i]!.prompt_id, prompt: examples[i]!.prompt, rubrics: examples[i]!.rubrics, exampleTags: examples[i]!.example_tags });
        expect(x.strata["theme"]).toBe(examples[i]!.example_tags.find((t) => t.startsWith("theme:"))!.slice(6));
      }
    }
    const multi = (await read(FULL)).find((x) => x.id === "synthetic-hb-0002") as EvalItem;
    expect(multi.case.notes).toBe("Conversation so far (the question below is the user's latest message):\n\nuser: My father is 71 and suddenly can't lift his right arm and his speech is slurred.\n\nassistant: How long ago did this start?");
  });

  it("refuses a record it cannot score, saying what to fix", async () => {
    const file = path.join(tmp(), "bad.jsonl");
    const ok = { prompt: [{ role: "user", content: "q?" }], rubrics: [{ criterion: "c", points: 1, tags: [] }], example_tags: [], prompt_id: "ok" };
    await writeFile(
      file,
      [
        { ...ok, prompt_id: "last-not-user", prompt: [{ role: "user", content: "q" }, { role: "assistant", content: "a" }] },
        { ...ok, prompt_id: "no-positive", rubrics: [{ criterion: "bad", points: -3, tags: [] }] },
        { ...ok, prompt_id: "points-text", rubrics: [{ criterion: "c", points: "5", tags: [] }] },
        ok,
      ]
        .map((r) => JSON.stringify(r))
        .join("\n") + "\n",
    );
    const items = await read(file);
    expect(items.map((x) => (isItemError(x) ? `${x.id}: ${x.error.message}` : x.id))).toEqual([
      "last-not-user: the last message of `prompt` must be a non-empty user turn (the one the reply answers)",
      "no-positive: no rubric criterion has positive points: the example cannot be scored",
      "points-text: rubrics[0].points must be a number",
      "ok",
    ]);
  });
});

describe("HealthBench scoring", () => {
  it("an example: points met (negatives subtract) over positive points, not clipped; a tag over its own criteria, none without positive points", () => {
    expect(rubricScore([{ points: 5 }, { points: 7 }, { points: -6 }, { points: 2 }], [true, false, true, true])).toBeCloseTo(1 / 14, 12);
    expect(rubricScore([{ points: 6 }, { points: -8 }], [false, true])).toBeCloseTo(-8 / 6, 12);
    expect(rubricScore([{ points: -6 }], [true])).toBeNull();
    const s = scoreExample([
      { criterion: "a", points: 5, tags: ["axis:completeness"], met: true, explanation: "" },
      { criterion: "b", points: -6, tags: ["axis:context_awareness"], met: false, explanation: "" },
    ]);
    expect(s).toEqual({ score: 1, tagScores: { "axis:completeness": 1, "axis:context_awareness": null } });
  });

  it("a figure: the mean over examples clipped to [0, 1], with a bootstrap interval and sd", () => {
    const m = clippedMean([0.5, 1, -2 / 3, 1]);
    expect(m.score).toBeCloseTo(11 / 24, 12);
    expect(m.n).toBe(4);
    expect(m.ci!.lo).toBeLessThanOrEqual(m.score!);
    expect(m.ci!.hi).toBeGreaterThanOrEqual(m.score!);
    expect(m.bootstrapStd).toBeGreaterThan(0);
    expect(clippedMean([0.5, -2 / 3]).score).toBe(0);
    expect(clippedMean([]).score).toBeNull();
  });
});

describe("a HealthBench run of the fixtures over the scripted model", () => {
  it("prints the overall score and the theme and axis breakdowns with intervals, and every score matches the verdicts computed by hand", async () => {
    servers.model.setScenario(healthbenchScenario());
    const out = path.join(tmp(), "run");
    const prices = JSON.stringify({ "scripted-executor": { input: 1, output: 2 }, "scripted-judge": { input: 3, output: 4 } });
    const { summary } = await runEval({ dataset: "healthbench", input: FULL, method: "cot", out, concurrency: 2, maxCostUsd: 100 }, { config: servers.config({ MEDMMV_PRICES: prices }), progress: null });
    const { records } = await readResults(path.join(out, "results.jsonl"));

    // By hand, from scripted-grader.json's verdicts and the rubrics' points:
    // 0001: met 5 and 2 of positives 5+7+2 → 7/14; accuracy 0/7; completeness 5/5; communication 2/2; context_awareness has no positive criterion.
    // 0002: met 10 and 4 (the −10 and −3 not met) of 10+4 → 1; accuracy 10/10; completeness 4/4.
    // 0003: met only the −8 criterion, of 6+6 → −8/12; context_awareness 0/6; accuracy −8/6.
    // 0004: met 5, 5, 3 (not the −5) of 13 → 1; accuracy 10/10; communication 3/3.
    const byHand: Record<string, { score: number; tags: Record<string, number | null> }> = {
      "synthetic-hb-0001": { score: 7 / 14, tags: { "axis:accuracy": 0, "axis:completeness": 1, "axis:communication_quality": 1, "axis:context_awareness": null, "level:example": 7 / 14 } },
      "synthetic-hb-0002": { score: 1, tags: { "axis:accuracy": 1, "axis:completeness": 1, "axis:communication_quality": null, "level:example": 1 } },
      "synthetic-hb-0003": { score: -8 / 12, tags: { "axis:context_awareness": 0, "axis:accuracy": -8 / 6, "level:example": -8 / 12 } },
      "synthetic-hb-0004": { score: 1, tags: { "axis:accuracy": 1, "axis:communication_quality": 1, "level:example": 1 } },
    };
    expect(records.map((r) => r.id).sort()).toEqual(Object.keys(byHand));
    for (const r of records) {
      const want = byHand[r.id]!;
      expect(r.healthbench!.grades.map((g) => g.met), r.id).toEqual(GRADER_SCRIPT[r.id]!.met);
      expect(r.healthbench!.score, r.id).toBeCloseTo(want.score, 12);
      expect(Object.keys(r.healthbench!.tagScores).sort(), r.id).toEqual(Object.keys(want.tags).sort());
      for (const [t, v] of Object.entries(want.tags)) v === null ? expect(r.healthbench!.tagScores[t]).toBeNull() : expect(r.healthbench!.tagScores[t], `${r.id} ${t}`).toBeCloseTo(v, 12);
      // Cost per example: the reply and every criterion's grading, at the two roles' prices.
      expect(r.usage.byAgent["rubric-grader"]!.calls).toBe(GRADER_SCRIPT[r.id]!.met.length);
      expect(r.usage.costUsd).toBeGreaterThan(0);
    }

    const h = summary.healthbench!;
    expect(h).toMatchObject({ graded: 4, ungraded: 0 });
    // Overall: mean(1/2, 1, −2/3, 1) = 11/24; themes: context_seeking mean(1/2, −2/3) < 0 → clipped to 0.
    expect(h.overall.score).toBeCloseTo(11 / 24, 12);
    expect(h.themes["context_seeking"]!.score).toBe(0);
    expect(h.themes["emergency_referrals"]!.score).toBe(1);
    expect(h.themes["communication"]!.score).toBe(1);
    // Axes: accuracy mean(0, 1, −4/3, 1) = 1/6; completeness 1; context_awareness 0 (0003 only); communication 1.
    expect(h.axes["accuracy"]!.score).toBeCloseTo(1 / 6, 12);
    expect(h.axes["accuracy"]!.n).toBe(4);
    expect(h.axes["completeness"]).toMatchObject({ score: 1, n: 2 });
    expect(h.axes["context_awareness"]).toMatchObject({ score: 0, n: 1 });
    expect(h.axes["communication_quality"]).toMatchObject({ score: 1, n: 2 });
    expect(h.otherTags["physician_agreed_category:enough-context"]!.n).toBe(2);
    expect(h.costPerExampleUsd).toBeCloseTo(records.reduce((s, r) => s + r.usage.costUsd, 0) / 4, 12);
    for (const m of [h.overall, ...Object.values(h.themes), ...Object.values(h.axes)]) expect(m.ci).not.toBeNull();

    const md = await readFile(path.join(out, "summary.md"), "utf8");
    expect(md).toContain("## HealthBench (rubric-graded)");
    expect(md).toMatch(/\| overall\s+\|\s+4 \|\s+45\.8 \|\s+\[\d+\.\d–\d+\.\d\] \|/);
    expect(md).toMatch(/\| theme: context_seeking\s+\|\s+2 \|\s+0\.0 \|/);
    expect(md).toMatch(/\| axis: accuracy\s+\|\s+4 \|\s+16\.7 \|\s+\[/);
    expect(md).toMatch(/Cost per graded example \(reply and grading\): \$\d+\.\d{4}/);
    // The grader's prompt is hashed with the run's prompts.
    expect(Object.keys(summary.prompts)).toContain("rubric-grader");
  });

  it("a criterion the grader never decides fails the item, with what it cost; the others are scored", async () => {
    servers.model.setScenario(
      healthbenchScenario((id) => {
        if (id === "synthetic-hb-0003") throw new Error("scripted grader failure");
        return undefined;
      }),
    );
    const out = path.join(tmp(), "grader-fails");
    const { summary } = await runEval({ dataset: "healthbench", input: FULL, method: "cot", out, concurrency: 2 }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" }), progress: null });
    const { records } = await readResults(path.join(out, "results.jsonl"));
    const failed = records.find((r) => r.id === "synthetic-hb-0003")!;
    expect(failed.status).toBe("failed");
    expect(failed.error?.message).toMatch(/^rubric grading failed: /);
    expect(summary.healthbench).toMatchObject({ graded: 3, ungraded: 1 });
    expect(summary.healthbench!.overall.score).toBeCloseTo((0.5 + 1 + 1) / 3, 12);
  });
});

describe("two HealthBench runs in eval report", () => {
  it("pair the overall and axis scores example by example", () => {
    const rec = (id: string, score: number, accuracy: number | null) =>
      resultRecord(id, 0, "completed", { gold: { kind: "open", text: HEALTHBENCH_GOLD }, healthbench: { promptId: id, exampleTags: ["theme:t"], grades: [], score, tagScores: { "axis:accuracy": accuracy } } });
    const a = [rec("e1", 1, 1), rec("e2", 0.5, 0), rec("e3", 0.25, null)];
    const b = [rec("e1", 0.5, 1), rec("e2", 0.5, 0), rec("e3", 0, null)];
    const [t] = pairedFigures(["a", "b"], [a, b]);
    expect(t!.table).toBe("HealthBench");
    expect(t!.figures.map((f) => f.name)).toEqual(["overall score", "axis: accuracy"]);
    const overall = t!.figures[0]!;
    expect(overall.a).toBeCloseTo(1.75 / 3, 12);
    expect(overall.b).toBeCloseTo(1 / 3, 12);
    expect(overall.difference!.value).toBeCloseTo(0.75 / 3, 12);
    expect(overall).toMatchObject({ mcnemar: null, pFrom: "bootstrap" });
    expect(overall.difference!.ci!.lo).toBeGreaterThanOrEqual(0);
    expect(t!.figures[1]!.difference!.value).toBe(0);
  });

  it("resample the point scores only: the figures of 300 examples over 10 axes are the runs' own, paired in one bootstrap", () => {
    // Each paired resample once ran computeHealthBench, a 2,000-resample bootstrap per tag of its
    // own: 2,000 × 11 × 2,000 × 300 steps here, which blocked the process for minutes (then failed
    // the timeout). The point scores are what a resample needs, and they are the summary's.
    const axes = Array.from({ length: 10 }, (_, k) => `axis:a${k}`);
    const rec = (id: string, i: number, shift: number) =>
      resultRecord(id, 0, "completed", {
        gold: { kind: "open", text: HEALTHBENCH_GOLD },
        healthbench: { promptId: id, exampleTags: [`theme:t${i % 3}`], grades: [], score: ((i * 37 + shift) % 100) / 100, tagScores: Object.fromEntries(axes.map((a, k) => [a, ((i * (k + 3) + shift) % 11) / 10])) },
      });
    const a = Array.from({ length: 300 }, (_, i) => rec(`e${i}`, i, 0));
    const b = Array.from({ length: 300 }, (_, i) => rec(`e${i}`, i, 5));
    const [t] = pairedFigures(["a", "b"], [a, b]);
    const [sa, sb] = [computeHealthBench(a)!, computeHealthBench(b)!];
    expect(t!.figures.map((f) => f.name)).toEqual(["overall score", ...axes.map((x) => x.replace("axis:", "axis: "))]);
    expect(t!.figures[0]!.a).toBeCloseTo(sa.overall.score!, 12);
    expect(t!.figures[0]!.b).toBeCloseTo(sb.overall.score!, 12);
    for (const [k, x] of axes.entries()) {
      const f = t!.figures[k + 1]!;
      expect(f.a).toBeCloseTo(sa.axes[x.slice("axis:".length)]!.score!, 12);
      expect(f.b).toBeCloseTo(sb.axes[x.slice("axis:".length)]!.score!, 12);
      expect(f.difference!.ci).not.toBeNull();
    }
  });
});
