/**
 * Trials per kind of the kill trials (test/faults/kill-trials.test.ts, replica-kill-trials.test.ts).
 *
 * `npm test` runs NPM_TEST_FAULT_TRIALS of each: every trial kills at a kill point of its own
 * (drawn from MEDMMV_FAULT_SEED), the eval trials alternate cot and the full method, and the
 * replica trials keep their Redis and Postgres restarts, so every kind of kill is exercised on
 * every run. `npm run reliability` runs the fault suite with FULL_FAULT_TRIALS before it writes
 * RELIABILITY.md, whose rows say how many trials each figure comes from.
 * MEDMMV_FAULT_TRIALS overrides both.
 */
export const NPM_TEST_FAULT_TRIALS = 3;
export const FULL_FAULT_TRIALS = 10;

export function faultTrials(): number {
  const n = Number(process.env.MEDMMV_FAULT_TRIALS);
  return Number.isInteger(n) && n >= 1 ? n : NPM_TEST_FAULT_TRIALS;
}
