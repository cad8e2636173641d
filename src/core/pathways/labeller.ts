import { NO_MATCH, type PathwayStep } from "../contracts/pathway.js";
import { TokenMatcher, type Phrase } from "./token-matcher.js";
import { keywordPhrase, stem, tokenize, type Token } from "./tokens.js";

/**
 * The keyword labeller (Dr-LLaVA App. B.2, done so that it reads clinicians' and models'
 * phrasing): free text + step → one category of that step, or `no-match`. Deterministic
 * and explainable (docs/architecture.md#clinical-pathways-and-conversations):
 * - text and keywords are compared as word tokens with inflection removed (`tokens.ts`):
 *   case never matters (AML = aml), plurals and -ed/-ing/-ly forms meet their base form, a
 *   trailing `*` matches any ending ("malignan*");
 * - a keyword is negated by a cue before it in its clause ("no", "not", "without", "absence
 *   of" … within four words, coordinated keywords not counted: "no AML or MM") or right
 *   after it ("… is not seen", "… absent"); a negated exclusion is affirmed ("AML cannot be
 *   excluded", "cannot rule out MM", "not ruled out"); a hedge ("unclear whether", "impossible
 *   to determine") leaves the keyword unsaid either way, and "unclear", "uncertain" and
 *   "whether" hedge everything after them in their clause;
 * - `negatedKeywords` count for their category only when negated ("no abnormalities" → normal);
 * - a keyword inside a longer matched keyword does not count on its own ("near particles" is
 *   not "particles");
 * - strong hits (ordinary keywords) beat weak ones (a keyword that is only a cue word, such
 *   as "not" or "cannot", and negated keywords); an answer with hits of two categories at the
 *   strongest level names both, so it is `no-match` with those categories in `ties`
 *   (ambiguous), never settled by length or list order.
 *
 * Cost: the step's matcher is built once (one token automaton for all its keywords) and a
 * label is one pass over the text plus constant work per hit.
 */

export interface KeywordHit {
  category: string;
  keyword: string;
  /** The words of the answer that matched. */
  text: string;
}

export interface LabelResult {
  step: string;
  /** A category id of the step, or "no-match". */
  category: string;
  /** The hit that decided the label (absent for no-match). */
  hit?: KeywordHit;
  /** Categories the answer names together (the label is then no-match: ambiguous). */
  ties?: string[];
  /** Keywords that occurred but were negated or hedged, so did not count. */
  negated: KeywordHit[];
}

const cues = (words: string[]) => new Set(words.map(stem));
/** Negation cues (stemmed). "less" as in "less suitable", "free" as in "free of". */
const NEGATION = cues([
  "no", "not", "non", "without", "cannot", "never", "none", "nor", "neither", "absent", "absence", "lack", "lacks", "lacking",
  "devoid", "free", "negative", "unlikely", "less", "hardly", "can't", "isn't", "aren't", "wasn't", "weren't", "doesn't", "don't",
  "didn't", "couldn't", "won't", "shouldn't", "nothing",
  // "the image prevents evaluation of irregularities": what is prevented is not found.
  "prevent",
]);
/** The negations that speak of the word before them ("AML is not seen", "blasts absent"); "nor" and "no" speak of what follows. */
const POST_NEGATION = cues(["not", "cannot", "never", "absent", "unlikely", "negative", "lacking", "less"]);
/** Verbs of exclusion: negated they affirm ("cannot be excluded"), alone they negate ("AML was excluded"). */
const EXCLUSION = cues(["exclude", "excluded", "excluding", "eliminated", "dismissed"]);
/** Hedges: the keyword is neither asserted nor denied ("unclear if there are any abnormalities"). */
const HEDGE = cues([
  "impossible", "unclear", "uncertain", "difficult", "unable", "whether", "if", "undetermined", "indeterminate",
  // "cannot assess malignancy", "to determine the presence of …": judging, not finding.
  "assess", "determine", "evaluate", "judge", "tell",
]);
/**
 * Hedges that open a question rather than qualify a word: everything after them in the clause is
 * neither asserted nor denied ("it is unclear if any irregularities exist that may indicate a
 * disease"), so they reach back over the whole walk, not only the window.
 */
const SCOPE_HEDGE = cues(["unclear", "uncertain", "whether"]);
/** Words a negation may reach over without counting toward its window ("no AML or MM", "no evidence of any malignancy"). */
const TRANSPARENT = cues(["and", "or", "either", "between", "of", "any", "for", "to", "in", "is", "are", "be", "been", "was", "were"]);
/** Words between a keyword and a cue after it ("malignancy is not seen", "AML cannot be excluded"). */
const AUXILIARY = cues([
  "is", "are", "was", "were", "be", "been", "being", "appears", "appear", "seems", "seem", "looks", "look", "can", "could", "may",
  "might", "should", "must", "will", "clearly", "definitely", "entirely", "completely", "reliably", "safely", "confidently", "present", "seen",
  "identified", "detected", "observed", "noted", "visible", "evident",
]);
/** Two-word cues: "rule out" excludes, "rather than" / "instead of" / "other than" negate what follows. */
const PAIR_CUES = new Map<string, "negation" | "exclusion">([
  [`${stem("rule")} out`, "exclusion"],
  ["rather than", "negation"],
  [`${stem("instead")} of`, "negation"],
  ["other than", "negation"],
]);
/** Words a cue after the keyword may not reach across ("AML and MM are not …" speaks of MM only through "and"). */
const POST_STOP = cues(["and", "or", "with", "than", "nor", "to", "for", "of", "in"]);
const POST_SKIP = 2;
const PRE_WINDOW = 4;
const PRE_REACH = 12;
const POST_WINDOW = 5;

interface Keyword {
  category: string;
  keyword: string;
  /** Counts only when negated (`negatedKeywords`). */
  whenNegated: boolean;
  /** Only cue words ("not", "no", "cannot"): a weak hit, and never negated by itself. */
  cueOnly: boolean;
  /** Its first word is a negation ("no malignancy phenotype"): its own cue does not negate it. */
  selfNegating: boolean;
  extraCues: Set<string>;
}

interface CompiledStep {
  matcher: TokenMatcher;
  keywords: Keyword[];
}

/** Bare answers to a yes/no question: as weak as "no" ("Yes, but the smear is inadequate" is inadequate). */
const BARE_ANSWERS = cues(["yes"]);
const isCue = (s: string) => NEGATION.has(s) || EXCLUSION.has(s) || HEDGE.has(s) || s.endsWith("n't");
const isWeakWord = (s: string) => isCue(s) || BARE_ANSWERS.has(s);

function compileStep(step: PathwayStep): CompiledStep {
  const phrases: Phrase[] = [];
  const keywords: Keyword[] = [];
  for (const c of step.categories) {
    const extraCues = cues(c.negations ?? []);
    const add = (keyword: string, whenNegated: boolean) => {
      const phrase = keywordPhrase(keyword);
      const all = phrase.prefix === undefined ? phrase.tokens : [...phrase.tokens, phrase.prefix];
      if (all.length === 0) return;
      phrases.push(phrase);
      keywords.push({ category: c.id, keyword, whenNegated, cueOnly: all.every(isWeakWord), selfNegating: NEGATION.has(all[0]!), extraCues });
    };
    for (const k of c.keywords) add(k, false);
    for (const k of c.negatedKeywords ?? []) add(k, true);
  }
  return { matcher: new TokenMatcher(phrases), keywords };
}

const compiled = new WeakMap<PathwayStep, CompiledStep>();
function compiledStep(step: PathwayStep): CompiledStep {
  let c = compiled.get(step);
  if (!c) compiled.set(step, (c = compileStep(step)));
  return c;
}

type Polarity = "affirmed" | "negated" | "hedged";

/** Negation, exclusion and hedge cues counted over `stems` → what they do to the keyword they surround. */
function polarity(counts: Counts): Polarity {
  if (counts.exclusion > 0) return counts.negation + counts.hedge > 0 ? "affirmed" : "negated";
  if (counts.hedge > 0) return "hedged";
  // Presence, not parity: "no, there is no AML" and "neither blasts nor plasma cells" deny once.
  return counts.negation > 0 ? "negated" : "affirmed";
}

type Counts = { negation: number; exclusion: number; hedge: number };

/** A two-word cue made of tokens i and i + 1: counted, and true. */
function countPair(tokens: readonly Token[], i: number, counts: Counts): boolean {
  const kind = i >= 0 && i + 1 < tokens.length && tokens[i]!.clause === tokens[i + 1]!.clause ? PAIR_CUES.get(`${tokens[i]!.stem} ${tokens[i + 1]!.stem}`) : undefined;
  if (kind) counts[kind]++;
  return kind !== undefined;
}

function count(stem: string, counts: Counts, extra: Set<string>, after = false): boolean {
  if ((after ? POST_NEGATION : NEGATION).has(stem) || stem.endsWith("n't") || (!after && extra.has(stem))) counts.negation++;
  else if (EXCLUSION.has(stem)) counts.exclusion++;
  else if (HEDGE.has(stem)) counts.hedge++;
  else return false;
  return true;
}

/** The cues around tokens [start, end): before it within the window, and right after it. */
function polarityAt(tokens: readonly Token[], start: number, end: number, kw: Keyword, covered: Uint8Array): Polarity {
  const counts: Counts = { negation: 0, exclusion: 0, hedge: 0 };
  const clause = tokens[start]!.clause;
  if (!kw.selfNegating && !kw.cueOnly) {
    let seen = 0;
    // Coordinated keywords and small words do not use up the window, but the walk back is bounded too (linear labelling).
    for (let i = start - 1; i >= 0 && i >= start - PRE_REACH && tokens[i]!.clause === clause && seen < PRE_WINDOW; i--) {
      const t = tokens[i]!;
      // "rule out X", "rather than X": the two words are one cue.
      if (countPair(tokens, i - 1, counts)) {
        i--;
        seen++;
        continue;
      }
      if (count(t.stem, counts, kw.extraCues)) seen++;
      else if (!covered[i] && !TRANSPARENT.has(t.stem)) seen++;
      // "… abnormal and appear healthy": an "and" that starts a new predicate ends the negation's reach.
      if ((t.stem === "and" || t.stem === "with") && i + 1 < start && !covered[i + 1]) break;
    }
  }
  if (!kw.cueOnly)
    for (let i = start - 1; i >= 0 && i >= start - PRE_REACH && tokens[i]!.clause === clause; i--)
      if (SCOPE_HEDGE.has(tokens[i]!.stem)) {
        counts.hedge++;
        break;
      }
  // The head noun of an adjective keyword may stand between it and the cue: "malignant cells are not identified".
  let skipped = 0;
  for (let i = end, seen = 0; i < tokens.length && tokens[i]!.clause === clause && seen < POST_WINDOW; i++, seen++) {
    const s = tokens[i]!.stem;
    const pair = i + 1 < tokens.length ? PAIR_CUES.get(`${s} ${tokens[i + 1]!.stem}`) : undefined;
    // After a keyword only "ruled out" speaks of it; "rather than Y" speaks of Y.
    if (pair === "exclusion") {
      counts.exclusion++;
      i++;
      continue;
    }
    if (pair) break;
    if (count(s, counts, kw.extraCues, true)) continue;
    if (AUXILIARY.has(s)) continue;
    if (covered[i] || POST_STOP.has(s) || ++skipped > POST_SKIP) break;
  }
  // A bare cue word ("cannot", "unclear") is what it says, unless an exclusion takes it ("cannot be excluded").
  if (kw.cueOnly) return counts.exclusion > 0 ? "negated" : "affirmed";
  return polarity(counts);
}

/** Label one free-text answer for one step of a pathway. */
export function labelAnswer(text: string, step: PathwayStep): LabelResult {
  const { matcher, keywords } = compiledStep(step);
  const tokens = tokenize(text);
  const raw = tokens.map((t) => t.raw);
  // A hit inside a longer hit does not count on its own ("near particles" holds "particles").
  const found = matcher
    .match(
      tokens.map((t) => t.stem),
      raw,
    )
    .filter((h) => tokens[h.start]!.clause === tokens[h.end - 1]!.clause)
    .sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: typeof found = [];
  let reach = -1;
  for (const h of found) {
    if (h.end <= reach && !(kept.length && kept.at(-1)!.start === h.start && kept.at(-1)!.end === h.end)) continue;
    kept.push(h);
    reach = Math.max(reach, h.end);
  }
  const covered = new Uint8Array(tokens.length);
  for (const h of kept) covered.fill(1, h.start, h.end);

  const strong: KeywordHit[] = [];
  const weak: KeywordHit[] = [];
  const negated: KeywordHit[] = [];
  for (const h of kept) {
    const kw = keywords[h.phrase]!;
    const hit = { category: kw.category, keyword: kw.keyword, text: raw.slice(h.start, h.end).join(" ") };
    const p = polarityAt(tokens, h.start, h.end, kw, covered);
    if (kw.whenNegated) {
      if (p === "negated") weak.push(hit);
    }
    else if (p !== "affirmed") negated.push(hit);
    else (kw.cueOnly ? weak : strong).push(hit);
  }
  const decisive = strong.length ? strong : weak;
  const categories = [...new Set(decisive.map((h) => h.category))];
  if (categories.length === 0) return { step: step.id, category: NO_MATCH, negated };
  if (categories.length > 1) return { step: step.id, category: NO_MATCH, ties: categories, negated };
  return { step: step.id, category: categories[0]!, hit: decisive[0]!, negated };
}

/** `s` as a literal inside a RegExp (kept here for the eval's answer matchers, which import it). */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
