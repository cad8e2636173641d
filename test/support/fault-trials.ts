/**
 * How big the long runs are in `npm test` and in `npm run reliability`.
 *
 * Trials per kind of the kill trials (test/faults/kill-trials.test.ts, replica-kill-trials.test.ts).
 *
 * `npm test` runs NPM_TEST_FAULT_TRIALS (2) of each: every trial kills at a kill point of its own
 * (drawn from MEDMMV_FAULT_SEED), the eval trials alternate cot and the full method (one of
 * each), and the replica trials keep their Redis and Postgres restarts, so every kind of kill is
 * exercised on every run. `npm run reliability` runs the fault suite with FULL_FAULT_TRIALS before it writes
 * RELIABILITY.md, whose rows say how many trials each figure comes from.
 * MEDMMV_FAULT_TRIALS overrides both.
 */
export const NPM_TEST_FAULT_TRIALS = 2;
export const FULL_FAULT_TRIALS = 10;

export function faultTrials(): number {
  const n = Number(process.env.MEDMMV_FAULT_TRIALS);
  return Number.isInteger(n) && n >= 1 ? n : NPM_TEST_FAULT_TRIALS;
}

/**
 * The share of the POST /diagnose fuzz's bodies (test/abuse/fuzz-diagnose.test.ts, 2,000+ in all)
 * that a run sends. `npm test` sends half of each category: every category and generator still
 * runs, from the same seed (the first half of the same sequence), and every property is checked
 * on each body. `npm run reliability` runs the abuse suite with all of them before it writes
 * RELIABILITY.md. MEDMMV_FUZZ_SHARE (0 < share ≤ 1) overrides both.
 */
export const NPM_TEST_FUZZ_SHARE = 0.5;
export const FULL_FUZZ_SHARE = 1;

export function fuzzShare(): number {
  const share = Number(process.env.MEDMMV_FUZZ_SHARE);
  return share > 0 && share <= 1 ? share : NPM_TEST_FUZZ_SHARE;
}
