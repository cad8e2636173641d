/**
 * Where a case's time beyond L × chain went, read from the scripted servers' own call log.
 *
 * The calls of one link of the chain start together (the bench scenarios fan out in lockstep:
 * every path of a link waits for the same replies), so the log falls into waves: a call starts
 * a new wave when it reached the provider more than L/2 after the wave's first call. With
 * S_i the last arrival and E_i the last reply of wave i, a case of n waves from t0 to t1 is
 *
 *     t1 − t0 = (S_1 − t0) + Σ (E_i − S_i) + Σ (S_i+1 − E_i) + (t1 − E_n)
 *
 * exactly, so its excess over n × L is the sum of four parts: the start-up until the first
 * wave's last call arrived, the waves' time beyond L (the provider's own: its timer's slack, its reply;
 * or a call of the wave that ended after the last one to start), the time between links (the
 * pipeline reading a link's replies and sending the next link's requests, while no call of the
 * chain is at the provider) and the time after the last reply. Both processes stamp times with
 * `performance.timeOrigin + performance.now()`, the same clock on one machine.
 */
export interface ExcessBreakdown {
  waves: number;
  startupMs: number;
  betweenLinksMs: number;
  wavesBeyondLMs: number;
  afterLastReplyMs: number;
}

export interface LoggedCall {
  start: number;
  end: number | null;
}

/** Null when the log does not fall into `chain` waves (the decomposition would not add up to the excess). */
export function excessBreakdown(calls: LoggedCall[], t0: number, t1: number, latencyMs: number, chain: number): ExcessBreakdown | null {
  const sorted = calls.filter((c) => c.start >= t0 && c.start <= t1).sort((a, b) => a.start - b.start);
  if (sorted.length === 0 || sorted.some((c) => c.end === null)) return null;
  const waves: Array<{ first: number; lastStart: number; lastEnd: number }> = [];
  for (const c of sorted) {
    const w = waves.at(-1);
    if (w && c.start - w.first <= latencyMs / 2) {
      w.lastStart = Math.max(w.lastStart, c.start);
      w.lastEnd = Math.max(w.lastEnd, c.end!);
    } else waves.push({ first: c.start, lastStart: c.start, lastEnd: c.end! });
  }
  if (waves.length !== chain) return null;
  let betweenLinksMs = 0;
  let wavesBeyondLMs = 0;
  waves.forEach((w, i) => {
    wavesBeyondLMs += w.lastEnd - w.lastStart - latencyMs;
    if (i > 0) betweenLinksMs += w.lastStart - waves[i - 1]!.lastEnd;
  });
  return { waves: waves.length, startupMs: waves[0]!.lastStart - t0, betweenLinksMs, wavesBeyondLMs, afterLastReplyMs: t1 - waves.at(-1)!.lastEnd };
}
