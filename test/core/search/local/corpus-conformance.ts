import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CorpusIndex } from "../../../../src/core/search/local/corpus-index.js";
import { prepareDocument, type CorpusRecord } from "../../../../src/core/search/local/corpus-record.js";
import { indexCorpusFile } from "../../../../src/core/search/local/index-corpus-file.js";
import { LocalSearch } from "../../../../src/core/search/local/local-search.js";

/**
 * One behavioural contract for every corpus index backend (docs/architecture.md#house-style), like the case
 * store's. Each test gets a fresh, empty location from the harness; the suite closes every
 * index it opened there, so no backend can leave a reopened one open.
 */
export interface CorpusHarness {
  /** An initialised index on this location; called again, another one, as a second process would open it. */
  open(): Promise<CorpusIndex>;
  /** Removes the location, after every index opened on it is closed. */
  cleanup?(): Promise<void>;
}

const docs = (records: CorpusRecord[]) => records.map((r) => prepareDocument(r));

const STEMI: CorpusRecord = {
  id: "stemi-ecg",
  title: "Inferior STEMI on the ECG",
  text: "ST elevation in leads II, III and aVF with reciprocal depression in aVL points to an inferior infarction, usually of the right coronary artery.",
  url: "https://guidelines.example/stemi",
  source: "Example Society",
};
const PERICARDITIS: CorpusRecord = {
  id: "pericarditis",
  title: "Acute pericarditis",
  text: "Diffuse concave ST elevation with PR depression and pleuritic chest pain relieved by leaning forward suggests pericarditis rather than infarction.",
};
const TROPONIN: CorpusRecord = {
  id: "troponin",
  title: "High-sensitivity troponin",
  text: "A rise and fall of cardiac troponin above the 99th percentile defines myocardial injury; with ischaemic symptoms it defines infarction.",
};

/** Text no real passage contains, for a term that only one chunk of a long document has. */
const LONG_FILLER = Array.from({ length: 400 }, (_, i) => `filler${i % 37} words about nothing in particular`).join(" ");

export const HOSTILE_QUERIES = [
  '"',
  'chest "pain',
  "NEAR(chest pain",
  "NEAR(chest pain, 2)",
  "troponin*",
  "*",
  "-troponin",
  "- - -",
  "title:troponin",
  "text: : :",
  "^troponin",
  "troponin AND OR NOT pericarditis",
  "AND",
  "NOT",
  "OR OR",
  "(troponin",
  ")",
  "{title text}: troponin",
  "troponin & pericarditis | !infarction <-> ecg",
  "'; DROP TABLE medmmv_corpus_docs; --",
  "\u0000\u0001\u001f",
  "ü漢字😀 ST‐elevation",
  "",
  "   ",
];

export function describeCorpusConformance(backend: string, makeHarness: () => Promise<CorpusHarness>, opts: { fuzzRuns: number }) {
  describe(`CorpusIndex conformance: ${backend}`, () => {
    let h: CorpusHarness;
    let opened: CorpusIndex[] = [];
    let index: CorpusIndex;
    const dirs: string[] = [];
    const reopen = async () => {
      const i = await h.open();
      opened.push(i);
      return i;
    };
    beforeEach(async () => {
      opened = [];
      h = await makeHarness();
      index = await reopen();
    });
    afterEach(async () => {
      for (const i of opened) await i.close();
      await h.cleanup?.();
    });
    afterAll(() => {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });
    const jsonl = (lines: string[]) => {
      const dir = mkdtempSync(join(tmpdir(), "medmmv-corpus-"));
      dirs.push(dir);
      const file = join(dir, "corpus.jsonl");
      writeFileSync(file, lines.join("\n") + "\n");
      return file;
    };

    it("finds passages by their words, the best match first, with url and source", async () => {
      await index.upsert("cardio", docs([STEMI, PERICARDITIS, TROPONIN]));
      const hits = await index.search("inferior ST elevation leads II III aVF", { limit: 5 });
      expect(hits[0]).toMatchObject({ corpus: "cardio", docId: "stemi-ecg", chunk: 0, title: STEMI.title, url: STEMI.url, source: STEMI.source });
      expect(hits.map((x) => x.docId)).toContain("pericarditis"); // shares "ST elevation"
      expect(hits.map((x) => x.docId)).not.toContain("troponin");
      for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
      // Stemming: "infarctions" matches "infarction".
      expect((await index.search("infarctions", { limit: 5 })).map((x) => x.docId).sort()).toEqual(["pericarditis", "stemi-ecg", "troponin"]);
      expect(await index.search("appendicitis", { limit: 5 })).toEqual([]);
    });

    it("re-indexing the same documents changes nothing; a changed one replaces its old text", async () => {
      expect(await index.upsert("cardio", docs([STEMI, TROPONIN]))).toEqual({ added: 2, updated: 0, unchanged: 0 });
      const before = await index.stats();
      expect(await index.upsert("cardio", docs([STEMI, TROPONIN]))).toEqual({ added: 0, updated: 0, unchanged: 2 });
      expect(await index.stats()).toEqual(before);
      expect((await index.search("troponin", { limit: 10 })).length).toBe(1);

      expect(await index.upsert("cardio", docs([{ ...TROPONIN, text: "Copeptin is an early marker." }]))).toEqual({ added: 0, updated: 1, unchanged: 0 });
      expect(await index.search("percentile", { limit: 10 })).toEqual([]);
      expect((await index.search("copeptin", { limit: 10 })).map((x) => x.docId)).toEqual(["troponin"]);
      const reopened = await reopen();
      expect((await reopened.stats()).map((s) => [s.corpus, s.documents, s.chunks])).toEqual([["cardio", 2, 2]]);
    });

    it("chunks long texts with overlap, so a term deep in a document points at its chunk", async () => {
      const long: CorpusRecord = { id: "long", title: "A long review", text: `${LONG_FILLER} the takotsubo cardiomyopathy section ${LONG_FILLER}` };
      await index.upsert("cardio", docs([long]));
      const [stats] = await index.stats();
      expect(stats!.chunks).toBeGreaterThan(3);
      const hits = await index.search("takotsubo", { limit: 10 });
      expect(hits.length).toBeGreaterThanOrEqual(1);
      expect(hits.every((x) => x.docId === "long" && x.chunk > 0 && /takotsubo/.test(x.text))).toBe(true);
    });

    it("keeps corpora apart: stats per corpus, search filtered by name", async () => {
      await index.upsert("cardio", docs([STEMI, TROPONIN]));
      await index.upsert("other", docs([{ ...TROPONIN, id: "t2" }]));
      expect((await index.stats()).map((s) => ({ corpus: s.corpus, documents: s.documents, chunks: s.chunks }))).toEqual([
        { corpus: "cardio", documents: 2, chunks: 2 },
        { corpus: "other", documents: 1, chunks: 1 },
      ]);
      expect((await index.stats()).every((s) => s.lastIndexedAt !== null && !Number.isNaN(Date.parse(s.lastIndexedAt)))).toBe(true);
      expect((await index.search("troponin", { limit: 10 })).map((x) => x.corpus).sort()).toEqual(["cardio", "other"]);
      expect((await index.search("troponin", { limit: 10, corpus: "other" })).map((x) => x.docId)).toEqual(["t2"]);
    });

    it("treats query syntax in the text as words: hostile strings never throw", async () => {
      await index.upsert("cardio", docs([STEMI, PERICARDITIS, TROPONIN]));
      for (const q of HOSTILE_QUERIES) {
        const hits = await index.search(q, { limit: 5 });
        expect(Array.isArray(hits), q).toBe(true);
      }
      // The words around the syntax still count.
      expect((await index.search('NEAR(troponin "percentile', { limit: 5 })).map((x) => x.docId)).toEqual(["troponin"]);
      expect((await index.search("-troponin", { limit: 5 })).map((x) => x.docId)).toEqual(["troponin"]);
      expect((await index.search("troponin AND OR NOT", { limit: 5 })).map((x) => x.docId)).toEqual(["troponin"]);
      expect(await index.search("'; DROP TABLE medmmv_corpus_docs; --", { limit: 5 })).toEqual([]);
      expect((await index.stats())[0]!.documents).toBe(3);
    });

    it("survives random hostile text (fuzz)", async () => {
      await index.upsert("cardio", docs([STEMI, PERICARDITIS, TROPONIN]));
      const fragment = fc.oneof(
        fc.constantFrom(...HOSTILE_QUERIES, "AND", "OR", "NOT", "NEAR", "(", ")", '"', "'", "*", "^", ":", "-", "+", "&", "|", "!", "<->", "{", "}", ",", "troponin", "ST", "aVF"),
        fc.string({ unit: "binary", maxLength: 12 }),
        fc.string({ maxLength: 12 }),
      );
      const text = fc.array(fragment, { maxLength: 12 }).chain((parts) => fc.constantFrom(parts.join(" "), parts.join("")));
      await fc.assert(
        fc.asyncProperty(text, async (q) => {
          const hits = await index.search(q, { limit: 3 });
          expect(Array.isArray(hits)).toBe(true);
        }),
        { numRuns: opts.fuzzRuns },
      );
    });

    it("indexes a JSONL file: bad lines reported by number and skipped, the rest indexed; again: idempotent", async () => {
      const file = jsonl([
        JSON.stringify(STEMI),
        "{ not json",
        JSON.stringify({ id: "no-title", text: "x" }),
        "",
        JSON.stringify(TROPONIN),
        JSON.stringify({ ...STEMI, title: "the same id again" }),
        JSON.stringify({ ...PERICARDITIS, url: "javascript:alert(1)" }),
        JSON.stringify(PERICARDITIS),
      ]);
      const first = await indexCorpusFile(index, file, "cardio");
      expect(first).toMatchObject({ corpus: "cardio", records: 7, added: 3, updated: 0, unchanged: 0, chunks: 3 });
      expect(first.errors.map((e) => e.line)).toEqual([2, 3, 6, 7]);
      expect(first.errors[0]!.message).toMatch(/JSON/);
      expect(first.errors[1]!.message).toMatch(/title/);
      expect(first.errors[2]!.message).toMatch(/duplicate id "stemi-ecg" \(first on line 1\)/);
      expect(first.errors[3]!.message).toMatch(/url/);

      const again = await indexCorpusFile(index, file, "cardio");
      expect(again).toMatchObject({ added: 0, updated: 0, unchanged: 3 });
      expect((await index.stats()).map((s) => [s.corpus, s.documents, s.chunks])).toEqual([["cardio", 3, 3]]);
      expect((await index.search("troponin", { limit: 10 })).length).toBe(1);
    });

    it("refuses a bad corpus name and a missing file with typed errors", async () => {
      await expect(indexCorpusFile(index, jsonl([JSON.stringify(STEMI)]), "Bad Name!")).rejects.toMatchObject({ code: "INVALID_INPUT" });
      await expect(indexCorpusFile(index, "/nonexistent/corpus.jsonl", "cardio")).rejects.toMatchObject({ code: "NOT_FOUND" });
    });

    it("as a search provider: hits look like web results, with corpus provenance and retrieval time", async () => {
      await index.upsert("cardio", docs([STEMI, PERICARDITIS, TROPONIN, { ...STEMI, id: "stemi/2 b", url: undefined, source: undefined }]));
      const provider = new LocalSearch(async () => index, { backend: index.backend });
      expect(provider).toMatchObject({ name: "local", enabled: true });
      const found = await provider.search("inferior STEMI aVF", { maxResults: 2 });
      expect(Date.parse(found.retrievedAt)).not.toBeNaN();
      expect(found.results.map((r) => r.url).sort()).toEqual(["corpus://cardio/stemi%2F2%20b", "https://guidelines.example/stemi"]);
      expect(found.results.find((r) => r.url.startsWith("https:"))!.title).toBe("Inferior STEMI on the ECG (Example Society)");
      const aborted = new AbortController();
      aborted.abort();
      await expect(provider.search("troponin", { signal: aborted.signal })).rejects.toMatchObject({ code: "ABORTED" });
    });
  });
}
