/**
 * JSON with object keys sorted at every depth, so equal values hash equally. Any string is
 * encoded safely: JSON.stringify (ES2019 well-formed) writes a lone surrogate as its `\udXXX`
 * escape, never as a broken UTF-8 sequence, so the text is valid UTF-8 and two different
 * strings never encode alike. (What a database keeps of such a string is another matter:
 * see storableText in src/server/store/access-chain.ts.)
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return v;
  });
}
