/**
 * Outcomes of repeated trials (kill -9 at random points, ...), recorded only once a trial's
 * assertions have run: a trial whose body returns is recorded as passed; one that fails an
 * assertion or throws (a case that never finished, a process that would not start) is
 * recorded as failed, with its error and whatever it had measured so far, and the error is
 * rethrown so the test fails too. A report built from the log can then count every trial,
 * not only the ones that got far enough to record themselves.
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

  async run(trial: number, body: (measured: Partial<M>) => Promise<void>): Promise<void> {
    const measured: Partial<M> = {};
    try {
      await body(measured);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.records.push({ trial, passed: false, error: message.split("\n")[0]!.slice(0, 200), measured });
      throw err;
    }
    this.records.push({ trial, passed: true, error: null, measured });
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

/** "a–b" for a list of numbers ("a" when they are all equal, "n/a" when empty). */
export function span(xs: readonly number[]): string {
  if (xs.length === 0) return "n/a";
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? String(lo) : `${lo}–${hi}`;
}
