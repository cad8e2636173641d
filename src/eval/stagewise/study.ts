import { InvalidArgumentError } from "commander";
import type { EvalStudy, FigureTable } from "../study.js";
import { computeStagewise } from "./metrics.js";
import { stagewiseMarkdown, stagewiseTables } from "./report.js";
import type { StagewiseOptions } from "./stagewise-method.js";
import { REPLACEMENTS, type ReplacementKey } from "./types.js";

/** The stage-wise (ClinHallu) flags as commander parses them. */
export interface StagewiseFlags {
  traces?: string;
  traceFormat?: "structured" | "text";
  replace?: ReplacementKey[];
  traceRetries?: number;
  stageJudge?: boolean;
  letterShortcut?: boolean;
}

/** `--replace V,K,VK` (any subset, any case) or `none`. */
export function replaceList(items: string[]): ReplacementKey[] {
  const parts = items.map((p) => p.toUpperCase());
  if (parts.length === 1 && parts[0] === "NONE") return [];
  const bad = parts.filter((p) => !(REPLACEMENTS as readonly string[]).includes(p));
  if (bad.length || parts.length === 0) throw new InvalidArgumentError(`expected a list of ${REPLACEMENTS.join(", ")} (e.g. "V,K,VK"), or "none"`);
  return [...new Set(parts)] as ReplacementKey[];
}

export function stagewiseRunOptions(o: StagewiseFlags): { stagewise: Partial<StagewiseOptions>; traces?: string; stageJudge?: true } {
  const stagewise: Partial<StagewiseOptions> = {};
  if (o.traceFormat) stagewise.format = o.traceFormat;
  if (o.replace) stagewise.replace = o.replace;
  if (o.traceRetries !== undefined) stagewise.retries = o.traceRetries;
  if (o.letterShortcut) stagewise.letterShortcut = true;
  return { stagewise, ...(o.traces ? { traces: o.traces } : {}), ...(o.stageJudge ? { stageJudge: true } : {}) };
}

/** ClinHallu's table: H_V, H_K, H_R (each item's stage hallucinated or not: a share of items) and ΔAcc of each replacement run present. */
function stagewiseFigures(records: Parameters<NonNullable<EvalStudy["figureTables"]>>[0]): FigureTable[] {
  const s = computeStagewise(records);
  if (!s) return [];
  const reps = REPLACEMENTS.filter((k) => s.rep[k]);
  return [
    {
      table: "ClinHallu",
      figures: [{ name: "H_V", perItem: true }, { name: "H_K", perItem: true }, { name: "H_R", perItem: true }, ...reps.map((k) => ({ name: `ΔAcc Rep-${k}` }))],
      values: (rs) => {
        const x = computeStagewise(rs);
        return [x?.hV ?? null, x?.hK ?? null, x?.hR ?? null, ...reps.map((k) => x?.rep[k]?.deltaAcc ?? null)];
      },
    },
  ];
}

/** ClinHallu stage-wise diagnosis (docs/evaluation.md#stage-wise-hallucination-diagnosis-clinhallu). */
export const stagewiseStudy: EvalStudy = {
  name: "stagewise",
  summary: (records) => {
    const stagewise = computeStagewise(records);
    return stagewise ? { stagewise } : {};
  },
  markdown: { after: "strata", section: (s) => (s.stagewise ? [stagewiseMarkdown(s.label, s.method, s.dataset.name, s.stagewise)] : []) },
  appendix: (summaries, names) => {
    const staged = summaries.flatMap((s, i) => (s.stagewise ? [{ name: names[i]!, label: s.label, dataset: s.dataset.name, stagewise: s.stagewise }] : []));
    return staged.length ? ["", "## Stage-wise diagnosis (ClinHallu)", "", stagewiseTables(staged)] : [];
  },
  figureTables: stagewiseFigures,
  flags: [
    { flags: "--traces <file>", description: "clinhallu + stagewise: judge the traces of a ClinHallu model_cot.jsonl instead of generating them" },
    { flags: "--trace-format <f>", description: "stagewise: one structured call, or ClinHallu's free-text [Visual Recognition] … [Answer] protocol", choices: ["structured", "text"] },
    { flags: "--replace <settings>", description: "stagewise: replacement runs, a list of V, K, VK, or none (default: all three where reference traces exist)", list: replaceList },
    { flags: "--trace-retries <n>", description: "stagewise: re-tries of an invalid trace before it is kept as invalid (2; ClinHallu's configuration uses 50)", int: [0, 50] },
    { flags: "--letter-shortcut", description: "stagewise / --stage-judge: settle an MC answer that is exactly an option's letter (or the letter and its text) without the answer judge; ClinHallu always asks the judge" },
    { flags: "--stage-judge", description: "medmmv / cot: judge the final path's steps by stage on ClinHallu's scale (H_V, H_K, H_R)" },
  ],
  runOptions: (o) => stagewiseRunOptions(o as StagewiseFlags),
};
