import { NO_MATCH, type Pathway, type PathwayPath } from "../contracts/pathway.js";

/** stepId → categoryId as labelled; `no-match` (or an absent step) labels nothing. */
export type LabelledSequence = Record<string, string>;

export interface ConsistencyResult {
  consistent: boolean;
  /** The valid paths that agree with every labelled step. */
  matchingPaths: string[];
  /** The steps that cannot all hold at once (empty when consistent). */
  conflictingSteps: string[];
  /** Pairs of labelled steps that no valid path allows together. */
  conflictingPairs: Array<[string, string]>;
  /** The valid path agreeing with most labelled steps, and where it disagrees. */
  closest?: { path: string; disagrees: string[] };
}

function labelled(seq: LabelledSequence, pathway: Pathway): Array<[string, string]> {
  // Pathway order, so messages read in the order a clinician walks the steps.
  return pathway.steps.flatMap((s) => (seq[s.id] !== undefined && seq[s.id] !== NO_MATCH ? [[s.id, seq[s.id]!] as [string, string]] : []));
}

/** A rule that does not mention a step places no constraint on it. */
function agrees(path: PathwayPath, stepId: string, categoryId: string): boolean {
  const want = path.sequence[stepId];
  return want === undefined || want === categoryId;
}

/**
 * docs/architecture.md#clinical-pathways-and-conversations: a labelled sequence is consistent when some rule in S agrees with every step
 * it labels (unlabelled and no-match steps are free). When it is not, the conflict is
 * explained by the pairs of steps no rule allows together, or (a conflict only among
 * three or more steps) by where the closest rule disagrees.
 */
export function checkConsistency(pathway: Pathway, seq: LabelledSequence): ConsistencyResult {
  const entries = labelled(seq, pathway);
  const matchingPaths = pathway.paths.filter((p) => entries.every(([s, c]) => agrees(p, s, c))).map((p) => p.id);
  let best: { path: PathwayPath; agree: number } | undefined;
  for (const p of pathway.paths) {
    const agree = entries.filter(([s, c]) => agrees(p, s, c)).length;
    if (!best || agree > best.agree) best = { path: p, agree };
  }
  const closest = best ? { path: best.path.id, disagrees: entries.filter(([s, c]) => !agrees(best.path, s, c)).map(([s]) => s) } : undefined;
  if (matchingPaths.length > 0) return { consistent: true, matchingPaths, conflictingSteps: [], conflictingPairs: [], closest };
  const conflictingPairs: Array<[string, string]> = [];
  for (let i = 0; i < entries.length; i++)
    for (let j = i + 1; j < entries.length; j++) {
      const [a, ca] = entries[i]!;
      const [b, cb] = entries[j]!;
      if (!pathway.paths.some((p) => agrees(p, a, ca) && agrees(p, b, cb))) conflictingPairs.push([a, b]);
    }
  const stepsInPairs = new Set(conflictingPairs.flat());
  const conflictingSteps =
    stepsInPairs.size > 0 ? entries.map(([s]) => s).filter((s) => stepsInPairs.has(s)) : (closest?.disagrees ?? entries.map(([s]) => s));
  return { consistent: false, matchingPaths, conflictingSteps, conflictingPairs, closest };
}

/** "image-quality = low, diagnosis = aml": the labels of the named steps, for messages. */
export function describeLabels(seq: LabelledSequence, steps: string[]): string {
  return steps.map((s) => `${s} = ${seq[s]}`).join(", ");
}

/** "aml (Acute myeloid leukemia …): image-quality = high, …, diagnosis = aml": one valid path, for prompts and messages. */
export function describePath(p: PathwayPath): string {
  return `${p.id} (${p.outcome}): ${describeLabels(p.sequence, Object.keys(p.sequence))}`;
}

/** The issue text of a context conflict (the detector's report, a conversation turn). */
export function contextConflictIssue(pathwayId: string, seq: LabelledSequence, steps: string[]): string {
  return `context-conflict: ${describeLabels(seq, steps)} fit no valid path of pathway "${pathwayId}"`;
}

/** One labelled answer of a conversation (step null or category no-match: it labels nothing). */
export interface LabelledAnswer {
  step: string | null;
  category: string | null;
}

export type AnswerSequenceCheck = ConsistencyResult & { sequence: LabelledSequence; contradicted: string[] };

/**
 * The same test over a conversation's answers, in turn order. A step answered twice with
 * two different categories contradicts itself: no rule can agree with both, so the
 * sequence leaves S at the turn that gave the second one.
 */
export function checkAnswerSequence(pathway: Pathway, answers: LabelledAnswer[]): AnswerSequenceCheck {
  const sequence: LabelledSequence = {};
  const contradicted: string[] = [];
  for (const a of answers) {
    if (!a.step || !a.category || a.category === NO_MATCH) continue;
    const before = sequence[a.step];
    if (before !== undefined && before !== a.category && !contradicted.includes(a.step)) contradicted.push(a.step);
    if (before === undefined) sequence[a.step] = a.category;
  }
  const r = checkConsistency(pathway, sequence);
  if (contradicted.length === 0) return { ...r, sequence, contradicted };
  const steps = [...new Set([...r.conflictingSteps, ...contradicted])];
  return { ...r, consistent: false, matchingPaths: [], conflictingSteps: steps, sequence, contradicted };
}

/**
 * The issue text of a conversation's conflict. The pathway is tested on each step's first
 * answer (`check.sequence`), so that is what the text names; a later, contradicting answer
 * may fit a valid path on its own, and the conflict is then that the step changed.
 */
export function answerSequenceIssue(pathway: Pathway, answers: LabelledAnswer[], check: AnswerSequenceCheck): string {
  const offPath = checkConsistency(pathway, check.sequence);
  const changed = check.contradicted.map((s) => {
    const later = [...new Set(answers.flatMap((a) => (a.step === s && a.category && a.category !== NO_MATCH && a.category !== check.sequence[s] ? [a.category] : [])))];
    return `${s} was answered ${check.sequence[s]} earlier and ${later.join(", then ")} later`;
  });
  if (!offPath.consistent) return [contextConflictIssue(pathway.id, check.sequence, offPath.conflictingSteps), ...changed].join("; ");
  return `context-conflict: ${changed.join("; ")}, which no valid path of pathway "${pathway.id}" allows`;
}
