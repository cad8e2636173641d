import { clustersBy } from "./bootstrap.js";

/** One answered-or-not record as calibration and selective prediction see it: its confidence and whether it was right. */
export interface Scored {
  confidence: number;
  correct: boolean;
  /** The item it belongs to (the cluster of a bootstrap over runs); without one, each record is its own. */
  item?: string;
}

/** A bootstrap's clusters: an item's records (its runs) together. */
export function itemClusters(xs: readonly Scored[]): Scored[][] {
  return clustersBy(xs, (x, i) => x.item ?? `\u0000${i}`);
}

/** Each record's cluster (item) as an index, for a bootstrap that resamples by counts per cluster. */
export function clusterIndex(xs: readonly Scored[]): { clusterOf: Int32Array; clusters: number } {
  const ids = new Map<string, number>();
  const clusterOf = new Int32Array(xs.length);
  xs.forEach((x, i) => {
    const key = x.item ?? `\u0000${i}`;
    let c = ids.get(key);
    if (c === undefined) ids.set(key, (c = ids.size));
    clusterOf[i] = c;
  });
  return { clusterOf, clusters: ids.size };
}

/** Records sorted by confidence (ascending or descending, ties in input order), each with its cluster index. */
export function sortedWithClusters(xs: readonly Scored[], order: "asc" | "desc"): { sorted: Scored[]; clusterOf: Int32Array; clusters: number } {
  const { clusterOf, clusters } = clusterIndex(xs);
  const idx = xs.map((_, i) => i).sort((a, b) => (order === "asc" ? xs[a]!.confidence - xs[b]!.confidence : xs[b]!.confidence - xs[a]!.confidence) || a - b);
  return { sorted: idx.map((i) => xs[i]!), clusterOf: Int32Array.from(idx, (i) => clusterOf[i]!), clusters };
}
