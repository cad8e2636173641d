/**
 * The labeller's view of text: lower-case word tokens, each with its inflection-free form
 * (`stem`), grouped into clauses. Keywords go through the same functions, so "abnormalities"
 * meets "abnormality", "clotted" meets "clot", "RBCs" meets "RBC" and "leukaemia" meets
 * "leukemia", whatever the case of either. Articles are dropped: "near the particles" is
 * "near particles".
 */

export interface Token {
  /** The word as written, lower-cased, British "ae" spelt "e" (prefix keywords test this). */
  raw: string;
  /** Its inflection-free form (exact keywords compare this). */
  stem: string;
  /** Which clause it is in: negation never crosses a clause. */
  clause: number;
}

const ARTICLES = new Set(["a", "an", "the"]);
/** Units after a number ("5 mm") are measurements, never the acronym they spell (MM). */
const UNITS = new Set(["mm", "cm", "um", "nm", "ml", "dl", "mg", "g", "l", "mmol", "fl", "pg"]);
/** Negation does not cross these words: a contrast opens a new clause. */
const CONTRAST = new Set(["but", "however", "whereas", "although", "though", "yet", "while"]);
const WORD_OR_BREAK = /[a-z0-9]+(?:'[a-z]+)?|[.;:!?,()[\]\n]/g;
const UNDOUBLE = /([bdgmnprt])\1$/;

/**
 * English inflection, not derivation: plural (-s, -es, -ies), past and gerund (-ed, -ing,
 * with a doubled consonant undone), adverb -ly and a final silent -e. Deliberately small:
 * both sides of every comparison go through it, so it need only be consistent, never a
 * dictionary. Words of three letters or fewer (no, not, AML, MM, RBC) are left as they are.
 */
export function stem(word: string): string {
  let cached = stems.get(word);
  if (cached === undefined) {
    // Bounded: a text of made-up words cannot grow the cache past its size.
    if (stems.size >= STEM_CACHE) stems.clear();
    stems.set(word, (cached = stemUncached(word)));
  }
  return cached;
}

const STEM_CACHE = 20_000;
const stems = new Map<string, string>();

function stemUncached(word: string): string {
  let w = word.replace(/'s$|'$/, "");
  if (w.length <= 3) return w;
  if (w.endsWith("ies") && w.length > 4) w = w.slice(0, -3) + "y";
  else if (w.endsWith("sses")) w = w.slice(0, -2);
  else if (/(?:x|ch|sh|z)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  for (const suffix of ["ing", "ed", "ly"]) {
    const base = w.slice(0, -suffix.length);
    if (w.endsWith(suffix) && base.length >= 3 && /[aeiouy]/.test(base)) {
      w = suffix === "ly" ? base : base.replace(UNDOUBLE, "$1");
      break;
    }
  }
  if (w.length > 3 && w.endsWith("e")) w = w.slice(0, -1);
  return w;
}

function spell(word: string): string {
  return word.replace(/aem/g, "em");
}

/** The last text tokenized: a reasoning path is labelled once per step, on the same text. */
let last: { text: string; tokens: readonly Token[] } | null = null;

/** Text → tokens with clause numbers. Linear in the text. */
export function tokenize(text: string): readonly Token[] {
  if (last?.text === text) return last.tokens;
  const tokens = tokenizeUncached(text);
  last = { text, tokens };
  return tokens;
}

function tokenizeUncached(text: string): Token[] {
  const lower = text.normalize("NFKC").replace(/[\u2018\u2019\u02bc]/g, "'").toLowerCase();
  const out: Token[] = [];
  let clause = 0;
  let open = false;
  for (const m of lower.matchAll(WORD_OR_BREAK)) {
    const w = m[0];
    if (!/[a-z0-9]/.test(w[0]!) || CONTRAST.has(w)) {
      if (open) clause++;
      open = false;
      continue;
    }
    if (ARTICLES.has(w)) continue;
    const raw = spell(w);
    const measured = UNITS.has(w) && out.length > 0 && /^\d+$/.test(out.at(-1)!.raw) && out.at(-1)!.clause === clause;
    out.push({ raw, stem: measured ? `#${raw}` : stem(raw), clause });
    open = true;
  }
  return out;
}

/** A keyword → the stems of its words and, for a trailing `*`, the raw prefix of its last word. */
export function keywordPhrase(keyword: string): { tokens: string[]; prefix?: string } {
  const wildcard = keyword.trimEnd().endsWith("*");
  const words = tokenize(wildcard ? keyword.trimEnd().slice(0, -1) : keyword);
  if (!wildcard || words.length === 0) return { tokens: words.map((t) => t.stem) };
  return { tokens: words.slice(0, -1).map((t) => t.stem), prefix: words.at(-1)!.raw };
}
