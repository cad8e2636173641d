import { MedmmvError } from "../../core/contracts/errors.js";
import { isItemError, type EvalItem, type ItemError } from "../datasets/types.js";
import { withHypothesis } from "./hypothesis.js";
import { permutationOrders, permuteItem } from "./shuffle.js";
import { MAX_SHUFFLES, type ProbeOptions } from "./types.js";

/** A multiple-choice item a probe can work on: two or more options, the gold one among them. */
function probeable(x: EvalItem): boolean {
  const options = x.case.options ?? {};
  return x.gold.kind === "choice" && x.gold.option !== undefined && options[x.gold.option] !== undefined && Object.keys(options).length >= 2;
}

export function probesRequested(o: Partial<ProbeOptions>): boolean {
  return o.hypothesis !== undefined || o.shuffleOptions !== undefined;
}

function checkShuffles(n: number | undefined): void {
  if (n !== undefined && (!Number.isInteger(n) || n < 1 || n > MAX_SHUFFLES)) throw new MedmmvError("INVALID_INPUT", `--shuffle-options must be an integer from 1 to ${MAX_SHUFFLES}`);
}

/**
 * The plan's items under the probes: each selected item once per permutation (`id#p1`…),
 * each with the clinician's statement. Runs after sampling, so --sample/--stratify pick
 * dataset items and every permutation of a picked item comes along. Items that are not
 * multiple choice cannot carry a probe and are left out (counted in `skipped`); items that
 * failed to load stay, so their failure is still reported.
 */
export function expandProbes(entries: ReadonlyArray<EvalItem | ItemError>, o: ProbeOptions): { items: Array<EvalItem | ItemError>; skipped: number } {
  if (!probesRequested(o)) return { items: [...entries], skipped: 0 };
  const n = o.shuffleOptions;
  checkShuffles(n);
  const items: Array<EvalItem | ItemError> = [];
  let skipped = 0;
  let probed = 0;
  for (const x of entries) {
    if (isItemError(x)) {
      items.push(x);
      continue;
    }
    if (!probeable(x)) {
      skipped++;
      continue;
    }
    probed++;
    const variants = n === undefined ? [x] : permutationOrders(Object.keys(x.case.options!), o.seed, x.id, n).map((order, i) => permuteItem(x, order, i + 1, n));
    for (const v of variants) items.push(o.hypothesis ? withHypothesis(v, o.hypothesis, o.seed) : v);
  }
  if (probed === 0 && entries.length > 0)
    throw new MedmmvError("INVALID_INPUT", "--hypothesis and --shuffle-options need multiple-choice items (two or more options, the gold answer among them); none of the selected items is");
  return { items, skipped };
}

/** What the probes were, for eval.json's config (so --resume refuses to mix) and the summary; checked before anything is written. */
export function probeConfig(o: ProbeOptions): Record<string, unknown> | null {
  checkShuffles(o.shuffleOptions);
  if (!probesRequested(o)) return null;
  return { hypothesis: o.hypothesis ?? null, shuffleOptions: o.shuffleOptions ?? null, seed: o.seed };
}

/** Appended to the run's label, so report columns say which probe they are. */
export function probeLabel(o: Partial<ProbeOptions>): string {
  const tags = [o.hypothesis, o.shuffleOptions !== undefined ? `shuffle×${o.shuffleOptions}` : undefined].filter(Boolean);
  return tags.length ? ` [${tags.join(", ")}]` : "";
}
