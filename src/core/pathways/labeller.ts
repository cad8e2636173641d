import { NO_MATCH, type PathwayCategory, type PathwayStep } from "../contracts/pathway.js";

/**
 * The keyword labeller (Dr-LLaVA App. B.2, done correctly): free text + step → one
 * category of that step, or `no-match`. Deterministic and explainable:
 * - keywords match on word boundaries (the released code's substring tests find "no"
 *   inside "normal" and "mm" inside "immature"); a plural s/es is allowed, a trailing `*`
 *   matches any ending, all-capital acronyms (AML, MM, RBC) match case-sensitively;
 * - a keyword preceded, within its clause, by a negation cue ("no", "not", "cannot",
 *   "absence of" …, within four words) or followed by one ("… is not", "… cannot be
 *   assessed", "… absent") does not count; a keyword that is itself a negated phrase
 *   ("no abnormality", the bare "no") is not negated by its own first word;
 * - the longest matching keyword wins; when different categories tie for the longest the
 *   answer is `no-match` and the tie is reported, never settled by list order.
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
  /** Categories that tied for the longest keyword (the label is then no-match). */
  ties?: string[];
  /** Keywords that occurred but were negated, so did not count. */
  negated: KeywordHit[];
}

const NEGATION_WORDS = new Set([
  "no", "not", "non", "without", "cannot", "never", "none", "nor", "neither", "absent", "lacks", "lacking",
  "can't", "isn't", "aren't", "wasn't", "weren't", "doesn't", "don't", "didn't", "couldn't", "won't", "hardly",
]);
const NEGATION_PHRASES = ["absence of", "free of", "lack of", "negative for", "rule out", "ruled out", "unable to", "devoid of"];
/** Cues that negate the keyword before them: "malignancy is not seen", "… cannot be assessed". */
const POST_NEGATION =
  /^\s*(?:(?:is|are|was|were|be|been|appears?|seems?|looks?)\s+)?(?:not|cannot|can't|isn't|aren't|wasn't|weren't|absent|excluded|ruled out|unlikely)\b/;
/** Negation does not cross these: a new sentence, clause or contrast. */
const CLAUSE_BREAK = /[.;:!?,()\n]+|\s(?:but|however|whereas|although|though|yet)\s/;
const PRE_WINDOW = 4;

interface CompiledKeyword {
  category: string;
  keyword: string;
  regex: RegExp;
  caseSensitive: boolean;
  /** Specificity: the keyword's length without its wildcard. */
  length: number;
  selfNegating: boolean;
  extraCues: string[];
}

/** `s` as a literal inside a RegExp. */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function compileKeyword(category: PathwayCategory, keyword: string): CompiledKeyword {
  const wildcard = keyword.endsWith("*");
  const bare = (wildcard ? keyword.slice(0, -1) : keyword).trim();
  const caseSensitive = /^[A-Z0-9]{2,}$/.test(bare);
  const words = (caseSensitive ? bare : bare.toLowerCase()).split(/[\s-]+/).filter(Boolean);
  // "low quality" also matches "low-quality"; the last word may take a plural or, with *, any ending.
  const body = words.map(escapeRegExp).join("[\\s-]+") + (wildcard ? "[a-z0-9]*" : "(?:s|es)?");
  return {
    category: category.id,
    keyword,
    regex: new RegExp(`(?<![A-Za-z0-9])${body}(?![A-Za-z0-9])`, "g"),
    caseSensitive,
    length: bare.length,
    selfNegating: NEGATION_WORDS.has(words[0]!.toLowerCase()),
    extraCues: (category.negations ?? []).map((n) => n.toLowerCase()),
  };
}

const compiled = new WeakMap<PathwayStep, CompiledKeyword[]>();
function keywordsOf(step: PathwayStep): CompiledKeyword[] {
  let list = compiled.get(step);
  if (!list) {
    list = step.categories.flatMap((c) => c.keywords.map((k) => compileKeyword(c, k)));
    compiled.set(step, list);
  }
  return list;
}

function words(s: string): string[] {
  return s.toLowerCase().match(/[a-z0-9']+/g) ?? [];
}

function isNegated(clause: string, start: number, end: number, kw: CompiledKeyword): boolean {
  if (kw.selfNegating) return false;
  const before = words(clause.slice(0, start)).slice(-PRE_WINDOW);
  if (before.some((w) => NEGATION_WORDS.has(w) || w.endsWith("n't"))) return true;
  const window = ` ${before.join(" ")} `;
  if ([...NEGATION_PHRASES, ...kw.extraCues].some((p) => window.includes(` ${p} `) || window.endsWith(` ${p} `))) return true;
  return POST_NEGATION.test(clause.slice(end).toLowerCase());
}

/** Label one free-text answer for one step of a pathway. */
export function labelAnswer(text: string, step: PathwayStep): LabelResult {
  const normalised = text.normalize("NFKC").replace(/[\u2018\u2019]/g, "'").replace(/\s+/g, " ");
  const hits: Array<KeywordHit & { length: number }> = [];
  const negated: KeywordHit[] = [];
  for (const clause of normalised.split(CLAUSE_BREAK)) {
    if (!clause.trim()) continue;
    const lower = clause.toLowerCase();
    for (const kw of keywordsOf(step)) {
      const haystack = kw.caseSensitive ? clause : lower;
      for (const m of haystack.matchAll(kw.regex)) {
        const hit = { category: kw.category, keyword: kw.keyword, text: m[0] };
        if (isNegated(clause, m.index, m.index + m[0].length, kw)) negated.push(hit);
        else hits.push({ ...hit, length: kw.length });
      }
    }
  }
  if (hits.length === 0) return { step: step.id, category: NO_MATCH, negated };
  const longest = Math.max(...hits.map((h) => h.length));
  const top = hits.filter((h) => h.length === longest);
  const categories = [...new Set(top.map((h) => h.category))];
  if (categories.length > 1) return { step: step.id, category: NO_MATCH, ties: categories, negated };
  const { length: _length, ...hit } = top[0]!;
  return { step: step.id, category: hit.category, hit, negated };
}
