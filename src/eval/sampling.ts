import { createHash } from "node:crypto";
import { MedmmvError } from "../core/contracts/errors.js";

export interface SelectionOptions {
  /** Draw this many items at random (deterministic for a seed). */
  sample?: number;
  /** Strata keys to sample proportionally within, e.g. ["body_system", "question_type"]. */
  stratify?: string[];
  seed?: number;
  /** Keep the first N items (after sampling, in file order). */
  limit?: number;
  /** --where: keep only items whose field has one of the values (every field must match), before sampling. */
  where?: Record<string, string[]>;
}

export interface SelectionReport {
  available: number;
  selected: number;
  sample: number | null;
  seed: number;
  stratify: string[];
  limit: number | null;
  /** --where, and how many items it kept of those read. */
  where?: Record<string, string[]>;
  matched?: number;
  /** Per stratum (values joined with " / "): how many items there were and how many were drawn. */
  groups?: Record<string, { available: number; selected: number }>;
}

/** An item's position in the random order of a seed: a hash of (seed, id), so it does not depend on file order or on the other items. */
export function rank(seed: number, id: string): string {
  return createHash("sha256").update(`${seed}\u0000${id}`).digest("hex");
}

export const NO_VALUE = "(none)";

/**
 * Largest-remainder apportionment of n over group sizes: each group gets floor(n·size/total),
 * and the leftover seats go to the largest fractional parts (ties: the group listed first).
 * No group gets more than it has.
 */
export function apportion(n: number, sizes: readonly number[]): number[] {
  const total = sizes.reduce((a, b) => a + b, 0);
  if (n >= total) return [...sizes];
  const quotas = sizes.map((s) => (n * s) / total);
  const out = quotas.map((q) => Math.floor(q));
  let left = n - out.reduce((a, b) => a + b, 0);
  const order = quotas.map((q, i) => ({ i, frac: q - Math.floor(q) })).sort((a, b) => b.frac - a.frac || a.i - b.i);
  for (const { i } of order) {
    if (left === 0) break;
    if (out[i]! < sizes[i]!) {
      out[i]!++;
      left--;
    }
  }
  return out;
}

/**
 * The items an eval runs: optionally a stratified random sample (proportional allocation,
 * deterministic for a seed), then optionally the first `limit`. Selected items keep their
 * file order, so a run reads the same way as the file.
 */
export function selectItems<T extends { id: string; strata?: Record<string, string> }>(items: readonly T[], opts: SelectionOptions): { selected: T[]; report: SelectionReport } {
  const seed = opts.seed ?? 1;
  const stratify = opts.stratify ?? [];
  const report: SelectionReport = { available: items.length, selected: 0, sample: opts.sample ?? null, seed, stratify, limit: opts.limit ?? null };
  if (stratify.length > 0 && opts.sample === undefined) throw new MedmmvError("INVALID_INPUT", "--stratify needs --sample N");
  const where = opts.where && Object.keys(opts.where).length > 0 ? opts.where : null;
  const fields = fieldNames(items);
  assertKnownFields(fields, stratify, "--stratify");
  if (where) assertKnownFields(fields, Object.keys(where), "--where");
  const pool = where ? items.filter((it) => Object.entries(where).every(([k, values]) => it.strata?.[k] !== undefined && values.includes(it.strata[k]!))) : [...items];
  if (where) {
    report.where = where;
    report.matched = pool.length;
  }
  let selected: T[] = pool;
  if (opts.sample !== undefined) {
    const groups = new Map<string, T[]>();
    for (const it of pool) {
      const key = stratify.map((k) => it.strata?.[k] ?? NO_VALUE).join(" / ");
      let g = groups.get(key);
      if (!g) groups.set(key, (g = []));
      g.push(it);
    }
    // Groups in sorted order so the remainder seats do not depend on which group the file lists first.
    const keys = [...groups.keys()].sort();
    const quotas = apportion(opts.sample, keys.map((k) => groups.get(k)!.length));
    const chosen = new Set<T>();
    report.groups = {};
    keys.forEach((k, gi) => {
      const g = groups.get(k)!;
      const ranked = g.map((it) => ({ it, r: rank(seed, it.id) })).sort((a, b) => (a.r < b.r ? -1 : a.r > b.r ? 1 : 0));
      for (const { it } of ranked.slice(0, quotas[gi]!)) chosen.add(it);
      if (stratify.length > 0) report.groups![k] = { available: g.length, selected: quotas[gi]! };
    });
    if (stratify.length === 0) delete report.groups;
    selected = pool.filter((it) => chosen.has(it));
  }
  if (opts.limit !== undefined) selected = selected.slice(0, opts.limit);
  report.selected = selected.length;
  return { selected, report };
}

/** The fields the dataset's items carry (their strata keys), sorted. */
export function fieldNames(items: ReadonlyArray<{ strata?: Record<string, string> }>): string[] {
  const names = new Set<string>();
  for (const it of items) for (const k of Object.keys(it.strata ?? {})) names.add(k);
  return [...names].sort();
}

/** A misspelt field would select nothing (or sample unstratified): refused, naming the fields there are. */
export function assertKnownFields(fields: readonly string[], names: readonly string[], flag: string): void {
  const unknown = names.filter((n) => !fields.includes(n));
  if (unknown.length === 0) return;
  const near = unknown.map((n) => fields.find((f) => f.toLowerCase() === n.toLowerCase().replace(/-/g, "_"))).filter((f): f is string => f !== undefined);
  throw new MedmmvError(
    "INVALID_INPUT",
    `${flag}: ${unknown.map((n) => `"${n}"`).join(", ")} ${unknown.length === 1 ? "is not a field" : "are not fields"} of this dataset${near.length ? ` (did you mean ${near.join(", ")}?)` : ""}; its fields: ${fields.length ? fields.join(", ") : "none"}`,
  );
}

/** `--where body_system=Cardiovascular,Respiratory` (repeatable) → field → values. */
export function parseWhere(clauses: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const c of clauses) {
    const at = c.indexOf("=");
    const field = at > 0 ? c.slice(0, at).trim() : "";
    const values = at > 0 ? c.slice(at + 1).split(",").map((v) => v.trim()).filter(Boolean) : [];
    if (!field || values.length === 0) throw new MedmmvError("INVALID_INPUT", `--where "${c}": expected field=value[,value…], e.g. body_system=Cardiovascular`);
    out[field] = [...new Set([...(out[field] ?? []), ...values])];
  }
  return out;
}
