import { InvalidArgumentError } from "commander";
import type { EvalRunOptions } from "../eval/runner.js";
import { REPLACEMENTS, type ReplacementKey } from "../eval/stagewise/types.js";
import { listArg } from "./cli-args.js";

/** The stage-wise (ClinHallu) flags of `medmmv eval`. */
export interface StagewiseCliOptions {
  traces?: string;
  traceFormat?: "structured" | "text";
  replace?: ReplacementKey[];
  traceRetries?: number;
  stageJudge?: boolean;
}

/** `--replace V,K,VK` (any subset, any case) or `none`. */
export function replaceArg(v: string): ReplacementKey[] {
  const parts = listArg(v).map((p) => p.toUpperCase());
  if (parts.length === 1 && parts[0] === "NONE") return [];
  const bad = parts.filter((p) => !(REPLACEMENTS as readonly string[]).includes(p));
  if (bad.length || parts.length === 0) throw new InvalidArgumentError(`expected a list of ${REPLACEMENTS.join(", ")} (e.g. "V,K,VK"), or "none"`);
  return [...new Set(parts)] as ReplacementKey[];
}

export function stagewiseRunOptions(o: StagewiseCliOptions): Pick<EvalRunOptions, "stagewise" | "traces" | "stageJudge"> {
  const stagewise: NonNullable<EvalRunOptions["stagewise"]> = {};
  if (o.traceFormat) stagewise.format = o.traceFormat;
  if (o.replace) stagewise.replace = o.replace;
  if (o.traceRetries !== undefined) stagewise.retries = o.traceRetries;
  return { stagewise, ...(o.traces ? { traces: o.traces } : {}), ...(o.stageJudge ? { stageJudge: true } : {}) };
}
