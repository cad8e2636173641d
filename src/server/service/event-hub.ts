import type { CaseEvent } from "../store/case-store.js";

/** Why a case's live stream ended without a final event. */
export type StreamEnd = "deleted" | "shutdown";

export interface CaseListener {
  onEvent(event: CaseEvent): void;
  onEnd(reason: StreamEnd): void;
}

/**
 * In-process fan-out of case events to live subscribers (SSE streams). The store holds
 * the history; this only carries what happens while someone is listening. A throwing
 * listener is dropped rather than allowed to break the pipeline that emitted the event.
 */
export class EventHub {
  readonly #listeners = new Map<string, Set<CaseListener>>();

  subscribe(caseId: string, listener: CaseListener): () => void {
    let set = this.#listeners.get(caseId);
    if (!set) {
      set = new Set();
      this.#listeners.set(caseId, set);
    }
    set.add(listener);
    return () => this.#remove(caseId, listener);
  }

  publish(event: CaseEvent): void {
    for (const l of [...(this.#listeners.get(event.caseId) ?? [])]) {
      try {
        l.onEvent(event);
      } catch {
        this.#remove(event.caseId, l);
      }
    }
  }

  end(caseId: string, reason: StreamEnd): void {
    const set = this.#listeners.get(caseId);
    this.#listeners.delete(caseId);
    for (const l of set ?? []) {
      try {
        l.onEnd(reason);
      } catch {
        // a broken listener has nothing left to end
      }
    }
  }

  endAll(reason: StreamEnd): void {
    for (const id of [...this.#listeners.keys()]) this.end(id, reason);
  }

  listenerCount(caseId: string): number {
    return this.#listeners.get(caseId)?.size ?? 0;
  }

  #remove(caseId: string, listener: CaseListener): void {
    const set = this.#listeners.get(caseId);
    if (!set) return;
    set.delete(listener);
    if (set.size === 0) this.#listeners.delete(caseId);
  }
}
