import { MedmmvError } from "../contracts/errors.js";

/** One rated answer (docs/architecture.md#scores). */
export interface ReliabilityItem {
  /** T ∈ [1, 5]. */
  truthfulness: number;
  /** I ∈ [1, 5]. */
  informativeness: number;
  /** C ∈ [0, 1]; omit (or null) when the item has no image, which counts as C = 1. */
  consistency?: number | null;
}

export interface ReliabilitySummary {
  n: number;
  meanTruthfulness: number | null;
  meanInformativeness: number | null;
  /** Mean of T×I on the 0–100 scale. */
  meanTxI: number | null;
  cmhr: number | null;
}

function checkRange(value: number, lo: number, hi: number, name: string): void {
  if (!Number.isFinite(value) || value < lo || value > hi) {
    throw new MedmmvError("INVALID_INPUT", `${name} must be in [${lo}, ${hi}]`, { details: { value } });
  }
}

/** T×I = T·I/25·100: the product rescaled so a perfect 5×5 reads 100. */
export function txi(truthfulness: number, informativeness: number): number {
  checkRange(truthfulness, 1, 5, "truthfulness");
  checkRange(informativeness, 1, 5, "informativeness");
  return ((truthfulness * informativeness) / 25) * 100;
}

/** Rel = (T/5)(I/5)C. */
export function rel(item: ReliabilityItem): number {
  checkRange(item.truthfulness, 1, 5, "truthfulness");
  checkRange(item.informativeness, 1, 5, "informativeness");
  const c = item.consistency ?? 1;
  checkRange(c, 0, 1, "consistency");
  return (item.truthfulness / 5) * (item.informativeness / 5) * c;
}

/** CMHR = 100·(1 − mean Rel): the share of unreliability, 0 for perfect answers. */
export function cmhr(items: readonly ReliabilityItem[]): number {
  if (items.length === 0) throw new MedmmvError("INVALID_INPUT", "CMHR needs at least one rated item");
  const mean = items.reduce((s, it) => s + rel(it), 0) / items.length;
  return 100 * (1 - mean);
}

/** Means of T, I, T×I and CMHR over rated items; all null when nothing was rated. */
export function aggregateReliability(items: readonly ReliabilityItem[]): ReliabilitySummary {
  const n = items.length;
  if (n === 0) return { n, meanTruthfulness: null, meanInformativeness: null, meanTxI: null, cmhr: null };
  let t = 0;
  let i = 0;
  let ti = 0;
  for (const it of items) {
    ti += txi(it.truthfulness, it.informativeness);
    t += it.truthfulness;
    i += it.informativeness;
  }
  return { n, meanTruthfulness: t / n, meanInformativeness: i / n, meanTxI: ti / n, cmhr: cmhr(items) };
}
