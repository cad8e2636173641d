import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { getAdapter, isItemError, type AdapterOptions, type EvalItem } from "../../src/eval/datasets/index.js";
import type { RunManifest } from "../../src/eval/manifest.js";
import type { ResultRecord } from "../../src/eval/results-file.js";
import type { Scenario, ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";
import { clinicalScenario, type ClinicalScenarioOptions } from "../../src/scripted/clinical-scenario.js";
import { pngWithCanvas } from "../../src/scripted/image-bytes.js";

export const SAMPLES = fileURLToPath(new URL("../../test/fixtures/benchmark-samples/", import.meta.url));
export const SAMPLE_IMAGES = path.join(SAMPLES, "images");

/** Stand-in image files under `dir` for the given names (the MM and PathVQA samples ship without images). */
export async function fakeImages(dir: string, names: readonly string[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const n of names) await writeFile(path.join(dir, n), pngWithCanvas(4, 4));
}

export async function readItems(dataset: string, file: string, opts: AdapterOptions = {}): Promise<EvalItem[]> {
  const out: EvalItem[] = [];
  for await (const x of getAdapter(dataset).read(file, opts)) {
    if (isItemError(x)) throw new Error(`fixture item ${x.id} did not load: ${x.error.message}`);
    out.push(x);
  }
  return out;
}

/** The key the scripted model uses to recognise an item from the case block of a prompt: question + image ids. */
export function keyOfCaseText(caseText: string): string {
  const question = /Question:\n([\s\S]*?)(?:\nAnswer options:|\nImages:|$)/.exec(caseText)?.[1] ?? "";
  const images = /\nImages: (.*)/.exec(caseText)?.[1] ?? "";
  return `${question}\u0000${images}`;
}

function keyOfItem(it: EvalItem): string {
  const images = (it.case.images ?? []).map((i) => i.id).join("; ");
  return `${it.case.question}\u0000${images}`;
}

export type Verdict = "gold" | "wrong";

/** An answer the grader must reject: another option letter, the other of yes/no, or unrelated text. */
export function wrongAnswer(it: EvalItem): string {
  const g = it.gold;
  if (g.kind === "choice") return Object.keys(it.case.options ?? {}).sort().find((l) => l !== g.option)!;
  if (g.kind === "closed" && /^(yes|no)$/i.test(g.text)) return g.text.toLowerCase() === "yes" ? "no" : "yes";
  return "zebra stripes";
}

export function rightAnswer(it: EvalItem): string {
  return it.gold.kind === "choice" ? it.gold.option! : it.gold.text;
}

/**
 * `answerFor` for the scripted clinician: finds the item a prompt is about and answers with
 * its gold answer or a wrong one, as `verdict` decides (per item, and per visit so that runs
 * of one item can differ). Throws on an unknown item, so a test cannot pass by accident.
 */
export function answerByItem(items: readonly EvalItem[], verdict: (it: EvalItem, visit: number) => Verdict): (req: ScriptedRequest, caseText: string) => string {
  const byKey = new Map<string, EvalItem>();
  for (const it of items) {
    const k = keyOfItem(it);
    const prev = byKey.get(k);
    if (prev && rightAnswer(prev) !== rightAnswer(it)) throw new Error(`fixture: two items share a question but not an answer (${prev.id}, ${it.id})`);
    byKey.set(k, it);
  }
  const visits = new Map<string, number>();
  return (req, caseText) => {
    const it = byKey.get(keyOfCaseText(caseText));
    if (!it) throw new Error(`scripted model: no item for this prompt (${req.agent})`);
    // Count visits per item only on the first call of an attempt (rollout 1 or the CoT call).
    const first = req.agent === "cot" || /rollout 1 of/.test(req.text);
    const n = visits.get(it.id) ?? 0;
    if (first) visits.set(it.id, n + 1);
    return verdict(it, first ? n : Math.max(0, n - 1)) === "gold" ? rightAnswer(it) : wrongAnswer(it);
  };
}

/** Scores a rater gives, by rater model name. */
export type RaterScores = Record<string, { truthfulness: number; informativeness: number; consistency: number }>;

/** The clinical scenario plus a `rater` script (the shared scenario does not script raters). */
export function evalScenario(o: ClinicalScenarioOptions, raters: RaterScores = {}): Scenario {
  const base = clinicalScenario(o);
  return {
    ...base,
    agents: {
      ...base.agents,
      rater: (req: ScriptedRequest) => {
        const s = raters[req.model];
        if (!s) throw new Error(`no scripted scores for rater ${req.model}`);
        return { ...s, rationale: "Scripted rating." };
      },
    },
  };
}

/** A results.jsonl record with neutral defaults, for tests of the pure parts. */
export function resultRecord(id: string, run: number, status: ResultRecord["status"] = "completed", extra: Partial<ResultRecord> = {}): ResultRecord {
  return {
    id,
    run,
    method: "cot",
    status,
    answer: status === "failed" ? null : { option: "A", text: "x" },
    gold: { kind: "choice", option: "A", text: "x" },
    correct: status === "completed",
    strata: {},
    usage: { llmCalls: 1, searchCalls: 0, promptTokens: 10, completionTokens: 5, costUsd: 0, wallMs: 3, byAgent: {} },
    cu: null,
    answerSupport: null,
    stability: null,
    hallucinations: { visual: 0, knowledge: 0, reasoning: 0, total: 0, resolved: 0 },
    errors: [],
    attempts: 1,
    finishedAt: "2025-01-01T00:00:00.000Z",
    ...extra,
  };
}

/** A run's eval.json with neutral values (a MedXpertQA-MM run), for tests of the report. */
export function runManifest(method: RunManifest["method"], label: string): RunManifest {
  return {
    schema: "medmmv-eval-run/1",
    dataset: "medxpertqa",
    input: "/data/MedXpertQA/MM/test.jsonl",
    images: "/data/MedXpertQA/images",
    missingImages: "error",
    copBase: "auto",
    fieldMap: null,
    method,
    label,
    runs: 1,
    concurrency: 4,
    selection: { sample: null, stratify: [], seed: 1, limit: null },
    config: { k: 5 },
    models: { executor: "m" },
    raters: [],
    prompts: { rollout: "sha256:" + "0".repeat(64) },
    createdAt: "2025-01-01T00:00:00.000Z",
    version: "0.1.0",
  };
}
