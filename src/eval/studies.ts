import { conversationStudy } from "./conversation/study.js";
import { healthbenchStudy } from "./healthbench/study.js";
import { probesStudy } from "./probes/study.js";
import { stagewiseStudy } from "./stagewise/study.js";
import { openStudy } from "./open/study.js";
import type { EvalStudy } from "./study.js";

/**
 * Every registered study, and the only place that names them: the metrics, summary, report
 * and eval command iterate over this list. The order is the order of their summary.json
 * fields, summary.md sections within a slot, report rows and flags.
 */
export const STUDIES: readonly EvalStudy[] = [probesStudy, stagewiseStudy, conversationStudy, healthbenchStudy, openStudy];
