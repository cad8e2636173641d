import type { ReplacementKey } from "../eval/stagewise/types.js";
import { replaceList, type StagewiseFlags } from "../eval/stagewise/study.js";
import { listArg } from "./cli-args.js";

/** The stage-wise (ClinHallu) flags of `medmmv eval` (declared by the stage-wise study). */
export type StagewiseCliOptions = StagewiseFlags;

export { stagewiseRunOptions } from "../eval/stagewise/study.js";

/** `--replace V,K,VK` (any subset, any case) or `none`. */
export function replaceArg(v: string): ReplacementKey[] {
  return replaceList(listArg(v));
}
