import path from "node:path";
import { markdownTable, ciText, pct } from "./report-table.js";
import { readResults, recordKey, RESULTS_FILE, type ResultRecord } from "./results-file.js";
import { STUDIES } from "./studies.js";
import { baseItem, relabel } from "./study-intervals.js";
import type { FigureTable } from "./study.js";
import { holm, mcnemarExact, pairedBootstrapMany, type Estimate, type McNemarResult } from "./stats/index.js";

/**
 * `eval report A B`'s paired comparison of every figure the studies report (each study
 * declares its tables, `EvalStudy.figureTables`): the two runs' records are paired by (id,
 * run) — an item, a probe of it (`id#p2`) or a conversation in one order (`id@si`), whose turns
 * pair with it — and each figure is compared on the pairs both runs have: the difference
 * A − B with a paired percentile bootstrap over items (an item's records of both runs drawn
 * together), McNemar's exact test where the figure is a share of items, and Holm's correction
 * across the figures of one table.
 */

export interface PairedFigure {
  name: string;
  a: number | null;
  b: number | null;
  /** A − B on the shared records, with its paired bootstrap interval. */
  difference: Estimate | null;
  /** The bootstrap's two-sided p of no difference. */
  bootstrapP: number | null;
  /** Per-item figures: McNemar's exact test on each shared item's first shared run; null otherwise, or when an item's records do not give it 0 or 1. */
  mcnemar: McNemarResult | null;
  /** What Holm's correction used: McNemar's p where there is one, else the bootstrap's. */
  p: number | null;
  pFrom: "McNemar" | "bootstrap" | null;
  pHolm: number | null;
}

export interface PairedTable {
  a: string;
  b: string;
  table: string;
  /** Items (clusters of records) both runs have for this comparison. */
  items: number;
  figures: PairedFigure[];
  notes: string[];
}

/** A folder's records (for the figures: every field the studies read). */
export async function loadRecords(dir: string): Promise<ResultRecord[]> {
  return (await readResults(path.join(dir, RESULTS_FILE))).records;
}

function tablesOf(records: readonly ResultRecord[]): FigureTable[] {
  return STUDIES.flatMap((s) => s.figureTables?.(records) ?? []);
}

const isBinary = (x: number | null | undefined): x is 0 | 1 => x === 0 || x === 1;

/** Every pair of runs, every table both have. */
export function pairedFigures(names: readonly string[], records: readonly (readonly ResultRecord[])[]): PairedTable[] {
  const out: PairedTable[] = [];
  for (let i = 0; i < names.length; i++) for (let j = i + 1; j < names.length; j++) out.push(...pairRuns(names[i]!, names[j]!, records[i]!, records[j]!));
  return out;
}

function pairRuns(nameA: string, nameB: string, recsA: readonly ResultRecord[], recsB: readonly ResultRecord[]): PairedTable[] {
  const byKeyB = new Map(recsB.map((r) => [recordKey(r.id, r.run), r]));
  // Clusters: one per shared item, its records of both runs.
  const clusters = new Map<string, { a: ResultRecord[]; b: ResultRecord[] }>();
  for (const r of recsA) {
    const other = byKeyB.get(recordKey(r.id, r.run));
    if (!other) continue;
    const c = clusters.get(baseItem(r.id)) ?? clusters.set(baseItem(r.id), { a: [], b: [] }).get(baseItem(r.id))!;
    c.a.push(r);
    c.b.push(other);
  }
  const shared = [...clusters.values()];
  const a = shared.flatMap((c) => c.a);
  const b = shared.flatMap((c) => c.b);
  const tablesA = tablesOf(a);
  const tablesB = new Map(tablesOf(b).map((t) => [t.table, t]));
  const out: PairedTable[] = [];
  const unpairedNotes: string[] = [];
  for (const ta of tablesA) {
    const tb = tablesB.get(ta.table);
    if (!tb) {
      unpairedNotes.push(`${ta.table}: only in ${nameA}`);
      continue;
    }
    tablesB.delete(ta.table);
    out.push(pairTable(nameA, nameB, ta, tb, shared));
  }
  for (const t of tablesB.keys()) unpairedNotes.push(`${t}: only in ${nameB}`);
  if (out.length && unpairedNotes.length) out[0]!.notes.push(...unpairedNotes.map((n) => `not compared, ${n}`));
  const onlyA = recsA.length - a.length;
  const onlyB = recsB.length - b.length;
  if (onlyA || onlyB) for (const t of out) t.notes.push(`compared on the ${a.length} (id, run) records both runs have (${onlyA} only in ${nameA}, ${onlyB} only in ${nameB})`);
  return out;
}

function pairTable(nameA: string, nameB: string, ta: FigureTable, tb: FigureTable, clusters: ReadonlyArray<{ a: ResultRecord[]; b: ResultRecord[] }>): PairedTable {
  const namesB = tb.figures.map((f) => f.name);
  const figs = ta.figures.flatMap((f, ia) => {
    const ib = namesB.indexOf(f.name);
    return ib < 0 ? [] : [{ name: f.name, perItem: Boolean(f.perItem && tb.figures[ib]!.perItem), ia, ib }];
  });
  const notes = ta.figures.filter((f) => !namesB.includes(f.name)).map((f) => `${f.name}: only in ${nameA}`);
  notes.push(...tb.figures.filter((f) => !figs.some((x) => x.name === f.name)).map((f) => `${f.name}: only in ${nameB}`));
  const va = ta.values(clusters.flatMap((c) => c.a));
  const vb = tb.values(clusters.flatMap((c) => c.b));

  // The resampled differences: an item drawn d times comes d times, each copy under ids of its own.
  const sampleA: ResultRecord[] = [];
  const sampleB: ResultRecord[] = [];
  const boot = pairedBootstrapMany(
    clusters.length,
    (counts) => {
      sampleA.length = 0;
      sampleB.length = 0;
      let draw = 0;
      counts.forEach((times, c) => {
        for (let t = 0; t < times; t++, draw++) {
          for (const r of clusters[c]!.a) sampleA.push(relabel(r, draw));
          for (const r of clusters[c]!.b) sampleB.push(relabel(r, draw));
        }
      });
      const xa = ta.values(sampleA);
      const xb = tb.values(sampleB);
      return figs.map((f) => (xa[f.ia] === null || xb[f.ib] === null ? null : xa[f.ia]! - xb[f.ib]!));
    },
    figs.length,
  );

  // McNemar on each item's first shared run: its records alone give the item's 0/1 outcome.
  const perItem = figs.some((f) => f.perItem)
    ? clusters.map((c) => {
        const first = Math.min(...c.a.map((r) => r.run));
        return { a: ta.values(c.a.filter((r) => r.run === first)), b: tb.values(c.b.filter((r) => r.run === first)) };
      })
    : [];
  const figures: PairedFigure[] = figs.map((f, k) => {
    let mcnemar: McNemarResult | null = null;
    if (f.perItem) {
      let bCount = 0;
      let cCount = 0;
      let concordant = 0;
      let binary = true;
      for (const it of perItem) {
        const x = it.a[f.ia];
        const y = it.b[f.ib];
        if (x === null || y === null || x === undefined || y === undefined) continue;
        if (!isBinary(x) || !isBinary(y)) binary = false;
        else if (x > y) bCount++;
        else if (x < y) cCount++;
        else concordant++;
      }
      if (binary) mcnemar = mcnemarExact(bCount, cCount, concordant);
      else notes.push(`${f.name}: an item's records do not give it 0 or 1 (several per run), so no McNemar; the bootstrap's p is used`);
    }
    const x = va[f.ia] ?? null;
    const y = vb[f.ib] ?? null;
    const p = mcnemar ? mcnemar.p : boot[k]!.p;
    return {
      name: f.name,
      a: x,
      b: y,
      difference: x === null || y === null ? null : { value: x - y, ci: boot[k]!.ci },
      bootstrapP: boot[k]!.p,
      mcnemar,
      p,
      pFrom: mcnemar ? "McNemar" : p === null ? null : "bootstrap",
      pHolm: null,
    };
  });
  const tested = figures.filter((f) => f.p !== null);
  const adjusted = holm(tested.map((f) => f.p!));
  tested.forEach((f, k) => (f.pHolm = adjusted[k]!));
  return { a: nameA, b: nameB, table: ta.table, items: clusters.length, figures, notes };
}

const pv = (p: number | null) => (p === null ? "—" : p < 0.0001 ? "<0.0001" : p.toFixed(4));
const signedPp = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}`;

export function pairedFiguresMarkdown(tables: readonly PairedTable[]): string {
  if (tables.length === 0) return "";
  const out = ["## Paired comparison of the studies' figures", ""];
  for (const t of tables) {
    out.push(`### ${t.a} − ${t.b}: ${t.table} (${t.items} shared items)`, "");
    out.push(
      markdownTable(
        ["figure", `${t.a} (%)`, `${t.b} (%)`, "difference (pp)", "95 % CI", "McNemar A>B / A<B", "p", "p (Holm)"],
        t.figures.map((f) => [f.name, pct(f.a), pct(f.b), f.difference ? signedPp(f.difference.value) : "—", ciText(f.difference?.ci), f.mcnemar ? `${f.mcnemar.b} / ${f.mcnemar.c}` : "—", f.pFrom ? `${pv(f.p)} (${f.pFrom})` : "—", pv(f.pHolm)]),
        ["l", "r", "r", "r", "r", "r", "r", "r"],
      ),
    );
    if (t.notes.length) out.push("", ...t.notes.map((n) => `- ${n}.`));
    out.push("");
  }
  out.push(
    "Each figure is recomputed, by its study's own function, on the (id, run) records both runs have; a conversation's turns pair with it. Difference = first − second; its 95 % interval is a paired percentile bootstrap over items (an item's records of both runs drawn together; 2,000 resamples, seed 1). McNemar's exact test where the figure is a share of items (each shared item's first shared run), otherwise the bootstrap's two-sided p; Holm's correction across the figures of one table.",
  );
  return out.join("\n");
}
