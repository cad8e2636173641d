import path from "node:path";
import { expandedWording } from "../../core/scoring/answer-clusters.js";
import { readResults, RESULTS_FILE, type ResultRecord } from "../results-file.js";
import { chosenOption } from "./robustness.js";

/** A probe run against the clean run of the same items: what the probe changed. */
export interface PairedComparison {
  /** Probe records whose (dataset item, run) has a clean record. */
  paired: number;
  /** Probe records with no clean counterpart (another sample, another run count). */
  unpaired: number;
  /** Paired records whose answer (the chosen option's text, whatever its letter) differs from the clean one. */
  changed: number;
  correctToWrong: number;
  wrongToCorrect: number;
}

const pairKey = (r: ResultRecord) => `${r.run}\u0000${r.permutation?.baseId ?? r.id}`;

/**
 * The answer in a form that survives re-lettering: the dataset option, else the text as the
 * answer clusters' rules read it (case, punctuation, articles, listed abbreviations), so a
 * probe that only rewords an open answer ("Inferior MI" for "inferior myocardial infarction")
 * does not count as a change. Rewordings only a model can see stay counted as changes.
 */
function answerKey(r: ResultRecord): string | null {
  const option = chosenOption(r);
  if (option !== null) return `option:${option}`;
  const text = r.answer ? expandedWording(r.answer.text) : "";
  return text === "" ? null : `text:${text}`;
}

/**
 * Pairs by dataset item id and run: a hypothesis record keeps its item's id, a shuffled
 * record `id#pk` pairs through its permutation's baseId (each permutation with the one
 * clean record).
 */
export function pairRecords(clean: readonly ResultRecord[], probe: readonly ResultRecord[]): PairedComparison {
  const base = new Map(clean.map((r) => [pairKey(r), r]));
  const out: PairedComparison = { paired: 0, unpaired: 0, changed: 0, correctToWrong: 0, wrongToCorrect: 0 };
  for (const r of probe) {
    const c = base.get(pairKey(r));
    if (!c) {
      out.unpaired++;
      continue;
    }
    out.paired++;
    if (answerKey(c) !== answerKey(r)) out.changed++;
    if (c.correct && !r.correct) out.correctToWrong++;
    if (!c.correct && r.correct) out.wrongToCorrect++;
  }
  return out;
}

/** Each later probe folder paired against the first; null for the first and for folders without probes (no results read). */
export async function pairAgainstFirst(dirs: readonly string[], probed: readonly boolean[]): Promise<Array<PairedComparison | null>> {
  if (!probed.slice(1).some(Boolean)) return dirs.map(() => null);
  const load = async (d: string) => (await readResults(path.join(d, RESULTS_FILE))).records;
  const clean = await load(dirs[0]!);
  return Promise.all(dirs.map(async (d, i) => (i > 0 && probed[i] ? pairRecords(clean, await load(d)) : null)));
}
