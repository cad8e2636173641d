import { isMedmmvError } from "../../core/contracts/errors.js";
import { loadPathway } from "../../core/pathways/load-pathway.js";
import { NO_MATCH, type Pathway, type PathwayStep } from "../../core/contracts/pathway.js";
import { labelAnswer } from "../../core/pathways/labeller.js";
import { asRecord, datasetRecords, itemError, ReadContext, text } from "../datasets/common.js";
import { isItemError, type AdapterOptions, type ItemError } from "../datasets/types.js";
import type { ConversationItem, TurnSpec } from "./types.js";

/**
 * Dr-LLaVA's source-folder labels → the bone-marrow path of the record (AML_Mono is AML,
 * reference §2.3). A turn's expected label is the labeller's label of the record's gold
 * answer, as the reference scores it (RLHF/models/reward_model.py compares the labels of
 * the model's and the gold answer); where the gold answer labels no-match, the path's
 * category stands in, so a wrong answer that is also no-match is not counted correct.
 */
const DRLLAVA_PATHS: Record<string, string> = {
  adequate_normal: "normal",
  adequate_aml: "aml",
  adequate_aml_mono: "aml",
  adequate_mm: "mm",
  blood: "blood",
  clot: "clot",
};

/** The expected label of a turn with a gold answer: the answer's label, else the path's category (with a warning saying so). */
export function expectedFromGold(step: PathwayStep, goldAnswer: string, pathCategory: string, turn: number, warnings: string[]): Pick<TurnSpec, "expected" | "expectedFrom" | "goldUnlabelled"> {
  const label = labelAnswer(goldAnswer, step).category;
  if (label === NO_MATCH) {
    warnings.push(`turn ${turn + 1} (${step.id}): the gold answer names no category; scored against the record's path (${pathCategory})`);
    return { expected: pathCategory, expectedFrom: "path", goldUnlabelled: true };
  }
  if (label !== pathCategory) warnings.push(`turn ${turn + 1} (${step.id}): the gold answer is labelled ${label}, the record's path says ${pathCategory}; scored against the gold answer`);
  return { expected: label, expectedFrom: "gold-answer" };
}

function stripImageToken(s: string): string {
  return s.replace(/<image>/g, " ").replace(/\s+/g, " ").trim();
}

function build(ctx: ReadContext, id: string, warnings: string[], pathway: Pathway, turns: TurnSpec[], opts: { pathwayRef: string | Pathway; question: string; notes?: string; images: { id: string; path: string }[] }): ConversationItem | ItemError {
  const diagnosis = pathway.steps.at(-1)!.id;
  const expectedDiagnosis = [...turns].reverse().find((t) => t.step === diagnosis)?.expected ?? "";
  const item = ctx.finish({
    id,
    case: { question: opts.question, ...(opts.notes ? { notes: opts.notes } : {}), ...(opts.images.length ? { images: opts.images } : {}), pathway: opts.pathwayRef },
    gold: { kind: "open", text: expectedDiagnosis },
    strata: {},
    warnings,
  });
  return isItemError(item) ? item : { item, pathway, turns };
}

/** `--dataset drllava`: the generator's records `{id, image, conversations: [{from, value}…] (5 human/gpt pairs), diagnosis}`. */
export async function* readDrLlava(file: string, opts: AdapterOptions): AsyncGenerator<ConversationItem | ItemError> {
  const ctx = new ReadContext("drllava", opts);
  const pathway = loadPathway("bone-marrow");
  for await (const step of datasetRecords(ctx, file, "id")) {
    if ("error" in step) {
      yield step.error;
      continue;
    }
    const { id, record, warnings } = step;
    const conv = Array.isArray(record["conversations"]) ? (record["conversations"] as unknown[]).map(asRecord) : null;
    const diagnosis = (text(record["diagnosis"]) ?? "").toLowerCase();
    const pathId = DRLLAVA_PATHS[diagnosis];
    if (!pathId) {
      yield itemError(id, `diagnosis "${diagnosis}" is not one of ${Object.keys(DRLLAVA_PATHS).join(", ")}`);
      continue;
    }
    if (!conv || conv.length !== 2 * pathway.steps.length || conv.some((c, i) => !c || text(c["from"]) !== (i % 2 === 0 ? "human" : "gpt") || text(c["value"]) === null)) {
      yield itemError(id, `conversations must be ${pathway.steps.length} human/gpt pairs, each {from, value}, human first`);
      continue;
    }
    const path = pathway.paths.find((p) => p.id === pathId)!;
    const turns: TurnSpec[] = pathway.steps.map((s, k) => {
      const goldAnswer = stripImageToken(text(conv[2 * k + 1]!["value"])!);
      return { question: stripImageToken(text(conv[2 * k]!["value"])!), step: s.id, goldAnswer, ...expectedFromGold(s, goldAnswer, path.sequence[s.id]!, k, warnings) };
    });
    const image = text(record["image"]);
    const resolved = await ctx.resolveImages(id, image ? [image] : []);
    if (!resolved.ok) {
      yield resolved.error;
      continue;
    }
    yield build(ctx, id, [...warnings, ...resolved.warnings], pathway, turns, { pathwayRef: "bone-marrow", question: turns.at(-1)!.question, images: resolved.images });
  }
}

/** `--dataset conversation`: JSONL of `{id, images?, notes?, question?, pathway, turns: [{question, step, expected?, answer?}]}` (a gold `answer` without `expected`: its label is expected). */
export async function* readConversationJsonl(file: string, opts: AdapterOptions): AsyncGenerator<ConversationItem | ItemError> {
  const ctx = new ReadContext("conversation", opts);
  for await (const step of datasetRecords(ctx, file, "id")) {
    if ("error" in step) {
      yield step.error;
      continue;
    }
    const { id, record, warnings } = step;
    let pathway: Pathway;
    try {
      if (record["pathway"] === undefined) throw new Error("`pathway` is required (a registry id or a pathway object)");
      pathway = loadPathway(record["pathway"]);
    } catch (e) {
      yield itemError(id, isMedmmvError(e) || e instanceof Error ? e.message : String(e));
      continue;
    }
    const rawTurns = Array.isArray(record["turns"]) ? (record["turns"] as unknown[]) : null;
    if (!rawTurns || rawTurns.length === 0) {
      yield itemError(id, "`turns` must be a non-empty array of {question, step, expected}");
      continue;
    }
    const turns: TurnSpec[] = [];
    let problem: string | null = null;
    rawTurns.forEach((raw, i) => {
      if (problem) return;
      const t = asRecord(raw);
      const question = t ? text(t["question"]) : null;
      const stepId = t ? text(t["step"]) : null;
      const goldAnswer = t ? text(t["answer"]) : null;
      const s = pathway.steps.find((x) => x.id === stepId);
      const labelled = s && goldAnswer ? labelAnswer(goldAnswer, s).category : null;
      const expected = (t ? text(t["expected"]) : null) ?? (labelled !== NO_MATCH ? labelled : null);
      if (!question || !stepId || !expected) problem = `turns[${i}] needs a question, a step and an expected category (or a gold answer that names one)`;
      else if (!s) problem = `turns[${i}].step "${stepId}" is not a step of pathway "${pathway.id}" (steps: ${pathway.steps.map((x) => x.id).join(", ")})`;
      else if (!s.categories.some((c) => c.id === expected)) problem = `turns[${i}].expected "${expected}" is not a category of step "${stepId}" (categories: ${s.categories.map((c) => c.id).join(", ")})`;
      else turns.push({ question, step: stepId, expected, ...(goldAnswer ? { goldAnswer } : {}), expectedFrom: t && text(t["expected"]) ? "path" : "gold-answer" });
    });
    if (problem) {
      yield itemError(id, problem);
      continue;
    }
    const images = Array.isArray(record["images"]) ? (record["images"] as unknown[]).map((x) => text(x) ?? text(asRecord(x)?.["path"])).filter((x): x is string => x !== null) : [];
    const resolved = await ctx.resolveImages(id, images);
    if (!resolved.ok) {
      yield resolved.error;
      continue;
    }
    const notes = text(record["notes"]) ?? undefined;
    yield build(ctx, id, [...warnings, ...resolved.warnings], pathway, turns, { pathwayRef: typeof record["pathway"] === "string" ? record["pathway"] : pathway, question: text(record["question"]) ?? turns.at(-1)!.question, ...(notes ? { notes } : {}), images: resolved.images });
  }
}
