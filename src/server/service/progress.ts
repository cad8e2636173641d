import type { PipelineOptions } from "../../core/workflow/state.js";
import type { CaseProgress } from "../store/case-store.js";

/**
 * Progress from the event stream, per stage: first rollouts and evidence agents together
 * (they run concurrently), then paths scored out of at most one per successful rollout
 * (identical paths are refined once), then done. Rebuilt from history when a case resumes.
 */
export class ProgressTracker {
  #rollouts = 0;
  #evidence = 0;
  #rolloutOk = 0;
  #scored = 0;
  #finished = false;
  readonly #rolloutTotal: number;
  readonly #evidenceTotal: number;

  constructor(options: PipelineOptions, imageCount: number, searchEnabled: boolean) {
    this.#rolloutTotal = options.ablations.noExpansion ? 1 : options.k;
    const a = options.ablations;
    this.#evidenceTotal = (a.noTextDoctor ? 0 : 1) + (a.noImageDoctor || imageCount === 0 ? 0 : 1) + (a.noWebSearch || !searchEnabled ? 0 : 1);
  }

  /** Feed one event; returns the new progress when it changed. */
  observe(type: string, data: Record<string, unknown>): CaseProgress | null {
    const branch = typeof data.branch === "string" ? data.branch : "";
    if (type === "rollout" || (type === "branch-failed" && branch.startsWith("rollout-"))) {
      this.#rollouts++;
      if (type === "rollout") this.#rolloutOk++;
    } else if (type === "evidence" || (type === "branch-failed" && /^(text-doctor|image-doctor|web-search)/.test(branch))) {
      this.#evidence++;
    } else if (type === "path-scored" || (type === "branch-failed" && branch.startsWith("path-"))) {
      this.#scored++;
    } else if (type === "final") {
      this.#finished = true;
    } else {
      return null;
    }
    return this.current();
  }

  current(): CaseProgress {
    if (this.#finished) return { step: "done", done: 1, total: 1 };
    if (this.#scored > 0) return { step: "refine", done: this.#scored, total: Math.max(this.#scored, this.#rolloutOk) };
    // Rollouts and evidence construction run concurrently: one stage, counted together.
    const evidence = Math.min(this.#evidence, this.#evidenceTotal);
    return { step: "rollouts-and-evidence", done: this.#rollouts + evidence, total: this.#rolloutTotal + this.#evidenceTotal };
  }
}
