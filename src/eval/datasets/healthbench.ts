import { HEALTHBENCH_GOLD, type HealthBenchItem, type RubricItem } from "../healthbench/types.js";
import { asRecord, eachDatasetRecord, itemError, ReadContext, text } from "./common.js";
import { isItemError, type AdapterOptions, type DatasetAdapter, type EvalItem, type ItemError } from "./types.js";

const ROLES = new Set(["system", "developer", "user", "assistant"]);

/** The earlier turns as the case's notes: who said what, in order (the reply answers the last user turn). */
export function conversationNotes(turns: ReadonlyArray<{ role: string; content: string }>): string {
  return ["Conversation so far (the question below is the user's latest message):", ...turns.map((t) => `${t.role}: ${t.content}`)].join("\n\n");
}

function rubricItems(raw: unknown): RubricItem[] | string {
  if (!Array.isArray(raw) || raw.length === 0) return "`rubrics` must be a non-empty array of {criterion, points, tags}";
  const out: RubricItem[] = [];
  for (const [i, x] of raw.entries()) {
    const r = asRecord(x);
    const criterion = r ? text(r["criterion"]) : null;
    const points = r?.["points"];
    const tags = r?.["tags"] ?? [];
    if (!criterion) return `rubrics[${i}] has no criterion`;
    if (typeof points !== "number" || !Number.isFinite(points)) return `rubrics[${i}].points must be a number`;
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== "string")) return `rubrics[${i}].tags must be an array of strings`;
    out.push({ criterion, points, tags: tags as string[] });
  }
  return out;
}

/**
 * HealthBench (OpenAI, 2025), the published JSONL as is — the full set, `hard` and
 * `consensus` alike: `{prompt: [{role, content}…], rubrics: [{criterion, points, tags}],
 * example_tags, prompt_id, ideal_completions_data?, canary?}`. The item asks the pipeline for
 * its reply to the last user turn, the turns before it being the case's notes; the rubric
 * rides on the item for the grader (src/eval/healthbench/grading-method.ts).
 */
async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
  const ctx = new ReadContext("healthbench", opts);
  yield* eachDatasetRecord(ctx, file, "prompt_id", async function* ({ id, warnings, record: r }) {
    const prompt = Array.isArray(r["prompt"]) ? (r["prompt"] as unknown[]).map(asRecord) : null;
    if (!prompt || prompt.length === 0 || prompt.some((m) => !m || !ROLES.has(text(m["role"]) ?? "") || typeof m["content"] !== "string")) {
      yield itemError(id, "`prompt` must be a non-empty array of {role: system|developer|user|assistant, content: string}");
      return;
    }
    const turns = prompt.map((m) => ({ role: text(m!["role"])!, content: m!["content"] as string }));
    const last = turns.at(-1)!;
    if (last.role !== "user" || !last.content.trim()) {
      yield itemError(id, "the last message of `prompt` must be a non-empty user turn (the one the reply answers)");
      return;
    }
    const rubrics = rubricItems(r["rubrics"]);
    if (typeof rubrics === "string") {
      yield itemError(id, rubrics);
      return;
    }
    if (!rubrics.some((x) => x.points > 0)) {
      yield itemError(id, "no rubric criterion has positive points: the example cannot be scored");
      return;
    }
    const tags = r["example_tags"] ?? [];
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== "string")) {
      yield itemError(id, "`example_tags` must be an array of strings");
      return;
    }
    const exampleTags = tags as string[];
    const strata: Record<string, string> = {};
    const theme = exampleTags.find((t) => t.startsWith("theme:"));
    if (theme) strata["theme"] = theme.slice("theme:".length);
    const earlier = turns.slice(0, -1);
    const item = ctx.finish({
      id,
      case: { question: last.content, ...(earlier.length ? { notes: conversationNotes(earlier) } : {}) },
      // No single gold answer: the rubric grades the reply, and `correct` is not HealthBench's measure.
      gold: { kind: "open", text: HEALTHBENCH_GOLD },
      strata,
      warnings,
    });
    if (isItemError(item)) {
      yield item;
      return;
    }
    const healthbench: HealthBenchItem = { promptId: text(r["prompt_id"]) ?? id, prompt: turns, rubrics, exampleTags };
    yield { ...item, healthbench };
  });
}

export function healthbenchAdapter(): DatasetAdapter {
  return { name: "healthbench", read };
}
