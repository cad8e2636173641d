import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TokenMatcher, type Phrase, type PhraseHit } from "../../../src/core/pathways/token-matcher.js";

/** Every occurrence by brute force: the definition the automaton must agree with. */
function naive(phrases: Phrase[], tokens: string[], raw: string[]): PhraseHit[] {
  const out: PhraseHit[] = [];
  phrases.forEach((p, phrase) => {
    const len = p.tokens.length + (p.prefix === undefined ? 0 : 1);
    if (len === 0) return;
    for (let start = 0; start + len <= tokens.length; start++) {
      const exact = p.tokens.every((t, k) => tokens[start + k] === t);
      const tail = p.prefix === undefined || raw[start + p.tokens.length]!.startsWith(p.prefix);
      if (exact && tail) out.push({ phrase, start, end: start + len });
    }
  });
  return out;
}

const key = (h: PhraseHit) => `${h.phrase}:${h.start}-${h.end}`;
const sorted = (hits: PhraseHit[]) => hits.map(key).sort();

describe("TokenMatcher (Aho–Corasick over tokens)", () => {
  it("finds overlapping, nested and repeated phrases, and prefix tails", () => {
    const phrases: Phrase[] = [{ tokens: ["no", "abnormal"] }, { tokens: ["abnormal"] }, { tokens: ["abnormal", "cell"] }, { tokens: ["no"], prefix: "prolif" }, { tokens: [], prefix: "malig" }];
    const text = ["no", "abnormal", "cell", "no", "proliferation", "malignant", "abnormal"];
    expect(sorted(new TokenMatcher(phrases).match(text, text))).toEqual(sorted(naive(phrases, text, text)));
    expect(sorted(new TokenMatcher(phrases).match(text, text))).toEqual(["0:0-2", "1:1-2", "1:6-7", "2:1-3", "3:3-5", "4:5-6"].sort());
  });

  it("agrees with brute force on random phrase sets and texts", () => {
    const word = fc.constantFrom("a", "b", "c", "ab", "abc");
    const phrase = fc.record({ tokens: fc.array(word, { maxLength: 4 }), prefix: fc.option(fc.constantFrom("a", "ab", "b"), { nil: undefined }) });
    fc.assert(
      fc.property(fc.array(phrase, { maxLength: 12 }), fc.array(word, { maxLength: 40 }), (phrases, text) => {
        const clean = phrases.map((p) => (p.prefix === undefined ? { tokens: p.tokens } : { tokens: p.tokens, prefix: p.prefix }));
        expect(sorted(new TokenMatcher(clean).match(text, text))).toEqual(sorted(naive(clean, text, text)));
      }),
      { numRuns: 300 },
    );
  });
});
