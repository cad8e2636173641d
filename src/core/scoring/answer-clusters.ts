/**
 * Rollout answers grouped by meaning (docs/architecture.md#scores). Multiple-choice answers
 * compare their option letter. Free-text answers merge without a model call when they are
 * trivially equal — the same text, the same text modulo case, punctuation, diacritics and
 * articles ("normalised"), or the same once the abbreviations of ABBREVIATIONS are written
 * out ("abbreviation"); what is left is for the equivalence judge, whose groups merge the
 * rule groups they join ("judge"). Semantic entropy (Farquhar et al., Nature 2024) is the
 * standard this follows: the answer distribution, RGM and entropy are taken over clusters.
 */
import { ABBREVIATIONS } from "./abbreviations.js";

export type ClusterRule = "identical" | "normalised" | "abbreviation" | "judge" | "option";

export interface AnswerLike {
  option: string | null;
  text: string;
}

export interface AnswerCluster {
  /** The distribution's key: the option letter, or the lexical key of the canonical wording. */
  key: string;
  /** The wording shown for the cluster: its most frequent one (the earliest on a tie). */
  canonical: string;
  /** Indices (into the rollout answers) of the rollouts in the cluster, ascending. */
  rollouts: number[];
  /** The strongest rule that merged the cluster's wordings ("identical" for one wording). */
  rule: ClusterRule;
  /** The distinct wordings, in the order they first appeared. */
  wordings: string[];
}

/** The old lexical key: lower case, punctuation deleted (kept beside the clusters as stability.lexical). */
export function lexicalKey(a: AnswerLike | null): string | null {
  if (!a) return null;
  return a.option ?? (a.text.trim().toLowerCase().replace(/[^\p{L}\p{N} ]/gu, "").replace(/\s+/g, " ") || null);
}

const ARTICLES = new Set(["a", "an", "the"]);

/** Case, diacritics, punctuation (read as a word break: "ST-elevation" is "st elevation") and articles removed. */
export function normalisedWording(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .split(" ")
    .filter((w) => w && !ARTICLES.has(w))
    .join(" ");
}

/** The normalised wording with every listed abbreviation written out. */
export function expandedWording(text: string): string {
  return normalisedWording(text)
    .split(" ")
    .map((w) => ABBREVIATIONS[w] ?? w)
    .join(" ");
}

/** The rule under which two wordings are equal without a model, or null when they are not. */
function ruleBetween(a: string, b: string): Exclude<ClusterRule, "judge" | "option"> | null {
  if (a.trim() === b.trim()) return "identical";
  if (normalisedWording(a) === normalisedWording(b)) return "normalised";
  if (expandedWording(a) === expandedWording(b)) return "abbreviation";
  return null;
}

const RULE_STRENGTH: Record<ClusterRule, number> = { identical: 0, option: 0, normalised: 1, abbreviation: 2, judge: 3 };

/** A group of rollouts found equal by the rules (the unit the judge sees). */
export interface RuleGroup {
  /** The rule form shared by its members: the option letter, or the expanded wording. */
  form: string;
  /** The group's first wording: what the judge is shown. */
  wording: string;
  rollouts: number[];
  rule: ClusterRule;
  option: boolean;
}

/** Group answers by the rules alone; null answers (failed rollouts) belong to no group. */
export function ruleGroups(answers: readonly (AnswerLike | null)[]): RuleGroup[] {
  const groups: RuleGroup[] = [];
  const byForm = new Map<string, RuleGroup>();
  answers.forEach((a, i) => {
    if (!a) return;
    const option = a.option !== null && a.option !== "";
    const form = option ? `option:${a.option}` : `text:${expandedWording(a.text)}`;
    if (!option && expandedWording(a.text) === "") return;
    const g = byForm.get(form);
    if (!g) {
      const made: RuleGroup = { form, wording: option ? a.option! : a.text.trim(), rollouts: [i], rule: option ? "option" : "identical", option };
      byForm.set(form, made);
      groups.push(made);
      return;
    }
    g.rollouts.push(i);
    if (!option) {
      const r = ruleBetween(g.wording, a.text) ?? "abbreviation";
      if (RULE_STRENGTH[r] > RULE_STRENGTH[g.rule]) g.rule = r;
    }
  });
  return groups;
}

/** The free-text rule groups the judge would be asked about (none when fewer than two). */
export function groupsForJudge(groups: readonly RuleGroup[]): RuleGroup[] {
  const text = groups.filter((g) => !g.option);
  return text.length >= 2 ? text : [];
}

/**
 * Clusters from the rule groups and, when the judge answered, its partition of the groups it
 * was shown (`judged[i]` is the judge's group number of `groupsForJudge(groups)[i]`). Clusters
 * are ordered by their first rollout.
 */
export function buildClusters(answers: readonly (AnswerLike | null)[], groups: readonly RuleGroup[], judged: readonly number[] | null): AnswerCluster[] {
  const asked = groupsForJudge(groups);
  const merged = new Map<string, RuleGroup[]>();
  const order: string[] = [];
  for (const g of groups) {
    const at = judged ? asked.indexOf(g) : -1;
    const id = at >= 0 ? `judge:${judged![at]}` : g.form;
    if (!merged.has(id)) {
      merged.set(id, []);
      order.push(id);
    }
    merged.get(id)!.push(g);
  }
  const clusters = order.map((id) => {
    const parts = merged.get(id)!;
    const rollouts = parts.flatMap((p) => p.rollouts).sort((a, b) => a - b);
    const rule = parts.length > 1 ? "judge" : parts[0]!.rule;
    const option = parts[0]!.option;
    const counts = new Map<string, number>();
    for (const i of rollouts) {
      const w = option ? answers[i]!.option! : answers[i]!.text.trim();
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
    const wordings = [...counts.keys()];
    const top = Math.max(...counts.values());
    const canonical = wordings.find((w) => counts.get(w) === top)!;
    const key = option ? canonical : (lexicalKey({ option: null, text: canonical }) ?? canonical);
    return { key, canonical, rollouts, rule, wordings } satisfies AnswerCluster;
  });
  return disambiguateKeys(clusters.sort((a, b) => a.rollouts[0]! - b.rollouts[0]!));
}

/** Two clusters whose canonical wordings share a lexical key (the judge kept them apart) get distinct keys. */
function disambiguateKeys(clusters: AnswerCluster[]): AnswerCluster[] {
  const seen = new Map<string, number>();
  return clusters.map((c) => {
    const n = (seen.get(c.key) ?? 0) + 1;
    seen.set(c.key, n);
    return n === 1 ? c : { ...c, key: `${c.key} #${n}` };
  });
}

/**
 * Which cluster an answer belongs to, for answers the rollouts did not give (a repaired path's):
 * the cluster of a rollout answer equal to it by the rules, or else its own lexical key.
 * No model call: a repaired wording the rules do not match stays apart.
 */
export class ClusterIndex {
  private readonly byForm = new Map<string, string>();
  constructor(
    readonly clusters: readonly AnswerCluster[],
    answers: readonly (AnswerLike | null)[],
  ) {
    for (const c of clusters)
      for (const i of c.rollouts) {
        const a = answers[i]!;
        this.byForm.set(formOf(a), c.key);
      }
  }

  keyOf(a: AnswerLike | null): string | null {
    if (!a) return null;
    return this.byForm.get(formOf(a)) ?? lexicalKey(a);
  }

  /** The cluster key of each rollout answer (null for a failed rollout). */
  rolloutKeys(n: number): (string | null)[] {
    const out: (string | null)[] = Array.from({ length: n }, () => null);
    for (const c of this.clusters) for (const i of c.rollouts) out[i] = c.key;
    return out;
  }
}

function formOf(a: AnswerLike): string {
  return a.option !== null && a.option !== "" ? `option:${a.option}` : `text:${expandedWording(a.text)}`;
}

/**
 * The judge's reply checked against the contract: `groups` must partition 1..n (every number
 * once). Returns each answer's group number (0-based), or a reason it is out of contract.
 */
export function readJudgeGroups(groups: unknown, n: number): { judged: number[] } | { outOfContract: string } {
  if (!Array.isArray(groups) || groups.length === 0) return { outOfContract: "groups is not a non-empty array" };
  const judged: number[] = Array.from({ length: n }, () => -1);
  for (const [g, members] of groups.entries()) {
    if (!Array.isArray(members) || members.length === 0) return { outOfContract: `group ${g + 1} is not a non-empty array of answer numbers` };
    for (const m of members) {
      if (typeof m !== "number" || !Number.isInteger(m) || m < 1 || m > n) return { outOfContract: `group ${g + 1} names ${JSON.stringify(m)}, not an answer number 1..${n}` };
      if (judged[m - 1] !== -1) return { outOfContract: `answer ${m} is in two groups` };
      judged[m - 1] = g;
    }
  }
  const missing = judged.findIndex((g) => g === -1);
  if (missing >= 0) return { outOfContract: `answer ${missing + 1} is in no group` };
  return { judged };
}
