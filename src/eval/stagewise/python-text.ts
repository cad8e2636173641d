/**
 * Python's notion of whitespace, for reading traces exactly as ClinHallu's Python does.
 * JavaScript's `\s` and `trim()` differ from Python's `str.strip()`, `str.split()` and
 * `re`'s `\s` in a few code points: Python also counts the information separators
 * U+001C–U+001F and NEL (U+0085) as whitespace, and does not count the BOM (U+FEFF).
 * A trace holding one of them would otherwise parse differently here and there.
 */
export const PY_WHITESPACE = "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

const LEADING = new RegExp(`^[${PY_WHITESPACE}]+`);
const TRAILING = new RegExp(`[${PY_WHITESPACE}]+$`);
const RUNS = new RegExp(`[${PY_WHITESPACE}]+`);

/** `s.strip()` in Python. */
export function pyStrip(s: string): string {
  return s.replace(LEADING, "").replace(TRAILING, "");
}

/** `len(s.split())` in Python: the number of whitespace-separated words. */
export function pyWordCount(s: string): number {
  return s.split(RUNS).filter((w) => w !== "").length;
}
