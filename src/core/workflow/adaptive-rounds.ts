import { MedmmvError } from "../contracts/errors.js";

/** Rollouts sampled in the first round when adaptive sampling is on. */
export const ADAPTIVE_FIRST_ROUND = 3;

/**
 * The first adaptive round has settled when its rollouts all gave one answer (entropy and
 * RGM 0): more samples with the same answer cannot change the selected answer. A failed
 * rollout (null) leaves the round unsettled, so the rest are sampled.
 */
export function firstRoundSettled(answers: Array<string | null>): boolean {
  return answers.length >= ADAPTIVE_FIRST_ROUND && answers.every((a) => a !== null) && new Set(answers).size === 1;
}

export type RoundDecision = { settled: true } | { settled: false; depth: number };

interface Round<A = unknown> {
  answers: Map<number, A | null>;
  depths: number[];
  decided: Promise<RoundDecision>;
  decide(d: RoundDecision): void;
}

/**
 * Lets the second adaptive round start as soon as the first round is done, without
 * waiting for the evidence graph. All k rollouts are sent at START, in the same LangGraph
 * superstep as evidence construction; rollouts after the first round wait here for the
 * first round's answers and either run or stand down. (Deciding at the join node instead
 * would put the second round behind the whole evidence chain: a superstep ends only when
 * all its tasks have.)
 *
 * In memory, per case (thread id) and process, like the event hooks: it is coordination,
 * not data. A case resumed from a checkpoint may have finished its first round in a process
 * that is gone, so there the second round runs unconditionally (correct, merely no saving).
 */
export class AdaptiveRounds {
  private readonly byThread = new Map<string, Round>();

  open(threadId: string, o: { resumed: boolean }): void {
    let decide!: (d: RoundDecision) => void;
    const decided = new Promise<RoundDecision>((r) => (decide = r));
    const round: Round = { answers: new Map(), depths: [], decided, decide };
    this.byThread.set(threadId, round);
    if (o.resumed) decide({ settled: false, depth: 0 });
  }

  close(threadId: string): void {
    // A waiting second-round task of a case that ends (abort, failure) must not hang.
    this.byThread.get(threadId)?.decide({ settled: false, depth: 0 });
    this.byThread.delete(threadId);
  }

  /**
   * A first-round rollout finished (answer null when it failed) at call-chain depth `depth`.
   * To the report that completes the round: its answers (by rollout index) and deepest chain;
   * that caller decides whether they agree (by meaning: answer-clustering.ts) and calls settle.
   */
  report<A>(threadId: string, index: number, answer: A | null, depth: number): { answers: Array<A | null>; depth: number } | null {
    const round = this.byThread.get(threadId) as Round<A> | undefined;
    if (!round || index >= ADAPTIVE_FIRST_ROUND || round.answers.has(index)) return null;
    round.answers.set(index, answer);
    round.depths.push(depth);
    if (round.answers.size < ADAPTIVE_FIRST_ROUND) return null;
    const answers = Array.from({ length: ADAPTIVE_FIRST_ROUND }, (_, i) => round.answers.get(i) ?? null);
    return { answers, depth: Math.max(0, ...round.depths) };
  }

  /** The first round's outcome, for the second-round rollouts waiting on it. */
  settle(threadId: string, d: RoundDecision): void {
    this.byThread.get(threadId)?.decide(d);
  }

  /** For a second-round rollout: wait for the first round's outcome (or the case's end). */
  async decision(threadId: string, signal?: AbortSignal): Promise<RoundDecision> {
    const round = this.byThread.get(threadId);
    if (!round) return { settled: false, depth: 0 };
    if (!signal) return round.decided;
    if (signal.aborted) throw new MedmmvError("ABORTED", "case cancelled");
    return new Promise<RoundDecision>((resolve, reject) => {
      const onAbort = () => reject(new MedmmvError("ABORTED", "case cancelled"));
      signal.addEventListener("abort", onAbort, { once: true });
      round.decided.then((d) => {
        signal.removeEventListener("abort", onAbort);
        resolve(d);
      });
    });
  }
}
