/**
 * The statistics every eval figure uses (summary, report, calibrate, the studies): one
 * implementation of each interval and test, unit-tested against hand-computed and published
 * values (test/eval/stats/). docs/evaluation.md#statistics says what each figure means.
 */
export * from "./interval.js";
export * from "./proportion.js";
export * from "./bootstrap.js";
export * from "./mcnemar.js";
export * from "./scored.js";
export * from "./calibration.js";
export * from "./selective.js";
export * from "./paired.js";
export * from "./paired-bootstrap.js";
