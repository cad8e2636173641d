/**
 * Full-text queries from untrusted text (facts extracted from a case, a model's query, a
 * user's CLI argument). Neither FTS5 nor tsquery syntax is ever passed through: the text
 * is reduced to plain word terms and the query is assembled here, so a quote, `NEAR(`,
 * `*`, `-`, `:`, `^` or AND/OR/NOT in a fact is just a word, or nothing.
 */

/** Words that carry no meaning for a literature match (English; both backends stem the rest). */
const STOPWORDS = new Set(
  ("a an and are as at be been but by for from has have in into is it its no not of on or than that the their then there these this " +
    "to was were which with without near what who whom why how does do did can may might should would could will shall")
    .split(" "),
);

/** More terms than this add noise, not recall, and grow the query plan. */
export const MAX_TERMS = 24;
const MAX_TERM_LENGTH = 40;

/** The distinct, lower-cased word terms of a text (letters and digits only), in order of first use. */
export function queryTerms(text: string): string[] {
  const words = text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const seen = new Set<string>();
  for (const w of words) {
    if (w.length < 2 || w.length > MAX_TERM_LENGTH || STOPWORDS.has(w)) continue;
    seen.add(w);
    if (seen.size >= MAX_TERMS) break;
  }
  return [...seen];
}

/**
 * An FTS5 MATCH expression: every term a quoted string (a quote inside is doubled, as
 * FTS5 requires), joined by OR so BM25 ranks passages by how many terms they share.
 * Null when the text has no usable term (the caller answers "no results").
 */
export function fts5Query(text: string): string | null {
  const terms = queryTerms(text);
  if (terms.length === 0) return null;
  return terms.map((t) => `"${t.replace(/"/g, '""')}"`).join(" OR ");
}

/**
 * A to_tsquery() argument: the terms joined by `|`. Terms are letters and digits only, so
 * none of tsquery's operators (& | ! <-> : * ( ) ') can appear inside one.
 */
export function tsQuery(text: string): string | null {
  const terms = queryTerms(text);
  if (terms.length === 0) return null;
  return terms.join(" | ");
}
