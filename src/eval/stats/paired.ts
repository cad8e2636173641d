import { clusterBootstrap, type BootstrapOptions } from "./bootstrap.js";
import type { Estimate } from "./interval.js";
import { mcnemarExact, type McNemarResult } from "./mcnemar.js";

/** One record of a run as a paired comparison needs it. */
export interface Outcome {
  item: string;
  run: number;
  correct: boolean;
}

export interface PairedComparison {
  /** Items both runs answered (an item counts when both have a record of it in some run). */
  sharedItems: number;
  onlyA: number;
  onlyB: number;
  /** (item, run) pairs both have. */
  pairs: number;
  /** Accuracy of A minus accuracy of B on the shared pairs, with a bootstrap interval that resamples items (their runs together). */
  difference: Estimate | null;
  accuracyA: number | null;
  accuracyB: number | null;
  /** McNemar's exact test on one record per item: the first run both have of it (runs of one item are not independent pairs). */
  mcnemar: McNemarResult;
  mcnemarRun: "first shared run per item";
}

const pairKey = (item: string, run: number) => `${run}\u0000${item}`;

/**
 * A against B on what they share: the difference in accuracy (paired: the same items, so the
 * items' difficulty cancels) and McNemar's exact test on the discordant items.
 */
export function pairedComparison(a: readonly Outcome[], b: readonly Outcome[], o: BootstrapOptions = {}): PairedComparison {
  const bBy = new Map(b.map((x) => [pairKey(x.item, x.run), x]));
  const itemsA = new Set(a.map((x) => x.item));
  const itemsB = new Set(b.map((x) => x.item));
  // Per shared item: its (a, b) pairs in run order.
  const byItem = new Map<string, Array<{ run: number; a: boolean; b: boolean }>>();
  for (const x of a) {
    const y = bBy.get(pairKey(x.item, x.run));
    if (!y) continue;
    const list = byItem.get(x.item) ?? byItem.set(x.item, []).get(x.item)!;
    list.push({ run: x.run, a: x.correct, b: y.correct });
  }
  const clusters = [...byItem.values()].map((l) => l.sort((p, q) => p.run - q.run));
  const pairs = clusters.reduce((s, c) => s + c.length, 0);
  const diff = (sample: Array<{ a: boolean; b: boolean }>) => {
    let d = 0;
    for (const p of sample) d += (p.a ? 1 : 0) - (p.b ? 1 : 0);
    return sample.length === 0 ? NaN : d / sample.length;
  };
  const all = clusters.flat();
  let bCount = 0;
  let cCount = 0;
  let concordant = 0;
  for (const c of clusters) {
    const first = c[0]!;
    if (first.a && !first.b) bCount++;
    else if (!first.a && first.b) cCount++;
    else concordant++;
  }
  const ci = pairs === 0 ? null : clusterBootstrap(clusters, diff, o);
  return {
    sharedItems: clusters.length,
    onlyA: [...itemsA].filter((i) => !itemsB.has(i)).length,
    onlyB: [...itemsB].filter((i) => !itemsA.has(i)).length,
    pairs,
    difference: pairs === 0 ? null : { value: diff(all), ci: ci && { ...ci, method: "paired-bootstrap" } },
    accuracyA: pairs === 0 ? null : all.filter((p) => p.a).length / pairs,
    accuracyB: pairs === 0 ? null : all.filter((p) => p.b).length / pairs,
    mcnemar: mcnemarExact(bCount, cCount, concordant),
    mcnemarRun: "first shared run per item",
  };
}
