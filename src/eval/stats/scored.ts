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
