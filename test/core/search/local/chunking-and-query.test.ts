import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chunkText } from "../../../../src/core/search/local/chunking.js";
import { fts5Query, MAX_TERMS, queryTerms, tsQuery } from "../../../../src/core/search/local/query-builder.js";

describe("chunkText", () => {
  it("keeps a short text whole and an empty one out", () => {
    expect(chunkText("  Troponin   rises.\n")).toEqual(["Troponin rises."]);
    expect(chunkText(" \n ")).toEqual([]);
  });

  it("cuts long texts into bounded, overlapping chunks of whole words that cover every word in order", () => {
    const word = fc.stringMatching(/^[a-z]{1,12}$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 400 }), fc.integer({ min: 40, max: 300 }), fc.integer({ min: 0, max: 30 }), (stems, size, overlap) => {
        // Unique words, so each chunk's place in the text is unambiguous.
        const words = stems.map((w, i) => `${w}${i}`);
        const text = words.join(" ");
        const chunks = chunkText(text, { size, overlap });
        let prevStart = -1;
        let prevEnd = 0; // word index just past the previous chunk
        for (const c of chunks) {
          expect(c.length).toBeLessThanOrEqual(Math.max(size, ...c.split(" ").map((w) => w.length)));
          const cw = c.split(" ");
          const start = words.indexOf(cw[0]!);
          // Whole words, in order, and contiguous with (or overlapping) the previous chunk.
          expect(words.slice(start, start + cw.length)).toEqual(cw);
          expect(start).toBeGreaterThan(prevStart);
          expect(start).toBeLessThanOrEqual(prevEnd);
          prevStart = start;
          prevEnd = start + cw.length;
        }
        expect(prevEnd).toBe(words.length);
      }),
      { numRuns: 300 },
    );
  });

  it("repeats text between neighbours when asked to", () => {
    const text = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
    const [a, b] = chunkText(text, { size: 100, overlap: 30 });
    const tail = a!.slice(-20).split(" ").slice(1).join(" ");
    expect(b!.startsWith(tail) || b!.includes(tail)).toBe(true);
  });

  it("refuses an overlap as large as the chunk", () => {
    expect(() => chunkText("x", { size: 10, overlap: 10 })).toThrow(RangeError);
  });
});

describe("query builder", () => {
  it("reduces text to distinct lower-case word terms without stopwords or syntax", () => {
    expect(queryTerms('NEAR("ST elevation" AND troponin*) -aVF ^II: OR not the ST')).toEqual(["st", "elevation", "troponin", "avf", "ii"]);
    expect(queryTerms("a I : * ^")).toEqual([]);
    expect(queryTerms(Array.from({ length: 100 }, (_, i) => `t${i}`).join(" "))).toHaveLength(MAX_TERMS);
  });

  it("quotes every FTS5 term and joins tsquery terms with |", () => {
    expect(fts5Query('chest "pain')).toBe('"chest" OR "pain"');
    expect(tsQuery("chest & pain")).toBe("chest | pain");
    expect(fts5Query("AND OR NOT")).toBeNull();
    expect(tsQuery("")).toBeNull();
  });
});
