import type { TestContext } from "vitest";

/**
 * Outcomes of repeated trials (kill -9 at random points, ...), recorded only once a trial's
 * assertions have run: a trial whose body returns is recorded as passed; one that fails an
 * assertion or throws (a case that never finished, a process that would not start) is
 * recorded as failed, with its error and whatever it had measured so far, and the error is
 * rethrown so the test fails too. A trial that runs into vitest's timeout is recorded as
 * failed when vitest reports the timeout (its body may still be pending then). A report
 * built from the log can then count every trial, not only the ones that got far enough to
 * record themselves.
 */
export interface TrialRecord<M> {
  trial: number;
  passed: boolean;
  /** First line of the error of a failed trial, else null. */
  error: string | null;
  /** What the trial measured before it ended (fields it never reached are absent). */
  measured: Partial<M>;
}

export class TrialLog<M extends object> {
  readonly records: TrialRecord<M>[] = [];

  /** Runs one trial as the body of the test whose context is `test`: `it(name, (test) => log.run(n, test, body))`. */
  async run(trial: number, test: Pick<TestContext, "onTestFailed">, body: (measured: Partial<M>) => Promise<void>): Promise<void> {
    const measured: Partial<M> = {};
    let recorded = false;
    // Once only: a timed-out body that settles later must not record the trial again. The
    // measurements are copied, so what such a body measures afterwards does not change them.
    const record = (passed: boolean, error?: unknown) => {
      if (recorded) return;
      recorded = true;
      this.records.push({ trial, passed, error: passed ? null : firstLine(error), measured: { ...measured } });
    };
    // vitest calls this for a timeout too, while the body is still pending.
    test.onTestFailed(({ task }) => record(false, task.result?.errors?.[0] ?? "the test failed"));
    try {
      await body(measured);
    } catch (err) {
      record(false, err);
      throw err;
    }
    record(true);
  }

  get passed(): number {
    return this.records.filter((r) => r.passed).length;
  }

  get failed(): number {
    return this.records.length - this.passed;
  }

  /** Sum of a measured number over all trials (absent counts as 0). */
  sum(key: { [K in keyof M]: M[K] extends number ? K : never }[keyof M]): number {
    return this.records.reduce((n, r) => n + ((r.measured[key] as number | undefined) ?? 0), 0);
  }

  /** The values a measured field took, in trial order, skipping trials that never measured it. */
  values<K extends keyof M>(key: K): M[K][] {
    return this.records.flatMap((r) => (r.measured[key] === undefined ? [] : [r.measured[key] as M[K]]));
  }

  /** "2 of 10 trials failed: trial 3 (timed out waiting for ...); trial 7 (...)", or "" when none did. */
  failures(): string {
    const bad = this.records.filter((r) => !r.passed);
    if (bad.length === 0) return "";
    return `${bad.length} of ${this.records.length} trials failed: ${bad.map((r) => `trial ${r.trial} (${r.error})`).join("; ")}`;
  }
}

/** First line of an error (an Error, or the plain { message } vitest reports), at most 200 characters. */
function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error);
  return message.split("\n")[0]!.slice(0, 200);
}

/** "a–b" for a list of numbers ("a" when they are all equal, "n/a" when empty). */
export function span(xs: readonly number[]): string {
  if (xs.length === 0) return "n/a";
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? String(lo) : `${lo}–${hi}`;
}
