import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { toRunOptions } from "../../../src/cli/eval-command.js";
import { readResults } from "../../../src/eval/results-file.js";
import { runEval } from "../../../src/eval/runner.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { EvalItem } from "../../../src/eval/datasets/types.js";
import { keyOfCaseText, readItems, SAMPLES } from "../eval-fixtures.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { useTempDir } from "../../support/temp-dir.js";

/**
 * `medmmv eval --open` on the MedQA sample: the options hidden, the gold option's text the
 * reference. A model that names the gold in other words is right through the equivalence
 * judge (exact match would say wrong); one that names another option's diagnosis is wrong.
 */
const servers = useScriptedServers();
const tmp = useTempDir("medmmv-open-eval-");
const MEDQA = path.join(SAMPLES, "medqa.jsonl");

/** The gold in other words: its words in another order, so no string rule (exact, containment) can see they agree. */
const reworded = (gold: string) => `in other words, ${gold.toLowerCase().split(" ").reverse().join(" ")}`;

describe("eval --open", () => {
  it("scores a reworded gold right through the judge and another diagnosis wrong, and reports the matcher against exact match", async () => {
    const items = await readItems("medqa", MEDQA);
    const byQuestion = new Map<string, EvalItem>(items.map((it) => [`${it.case.question}\u0000`, it]));
    // Items 1 and 2 answered with the gold in other words; items 3 and 4 with another option's text.
    const answerOf = (it: EvalItem) => {
      const i = items.indexOf(it);
      if (i < 2) return reworded(it.gold.text);
      return Object.entries(it.case.options!).find(([l]) => l !== it.gold.option)![1];
    };
    const prompts: string[] = [];
    servers.model.setScenario(
      clinicalScenario({
        answerFor: (_req, caseText) => {
          prompts.push(caseText);
          const it = byQuestion.get(keyOfCaseText(caseText));
          if (!it) throw new Error("no item for this prompt");
          return answerOf(it);
        },
        synonyms: items.map((it) => [it.gold.text, reworded(it.gold.text)]),
      }),
    );
    const out = path.join(tmp(), "open");
    const { summary } = await runEval({ dataset: "medqa", input: MEDQA, method: "cot", out, concurrency: 2, open: true }, { config: servers.config(), progress: null });
    // The options never reach the model.
    expect(prompts.length).toBeGreaterThan(0);
    for (const p of prompts) expect(p).not.toContain("Answer options:");
    const { records } = await readResults(path.join(out, "results.jsonl"));
    const byId = new Map(records.map((r) => [r.id, r]));
    for (const [i, it] of items.entries()) {
      const r = byId.get(it.id)!;
      expect(r.gold).toEqual({ kind: "open", text: it.gold.text });
      expect(r.correct, it.id).toBe(i < 2);
      expect(r.openMatch, it.id).toMatchObject({ verdict: i < 2 ? "judge-same" : "different", exact: false });
      expect(r.usage.byAgent["equivalence-judge"]!.calls).toBe(1);
    }
    expect(summary.openMatch).toEqual({ items: 4, correct: 2, exactCorrect: 0, agree: 2, agreement: 0.5, verdicts: { "judge-same": 2, different: 2 } });
    expect(summary.accuracy).toBe(0.5);
    const md = await readFile(path.join(out, "summary.md"), "utf8");
    expect(md).toContain("## Open-ended answers (graded by meaning)");
    expect(md).toContain("the two agree on 2 (50.0 %)");
    expect(summary.prompts).toHaveProperty("equivalence-judge");
  });

  it("the --open flag reaches the runner", () => {
    expect(toRunOptions({ open: true, dataset: "medqa", input: MEDQA, out: "x", runs: 1, method: "cot", concurrency: 1, expansion: true, hd: true, textDoctor: true, imageDoctor: true, webSearch: true } as never)).toMatchObject({ open: true });
  });
});
