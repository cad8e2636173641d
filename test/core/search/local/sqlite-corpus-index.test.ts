import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { prepareDocument } from "../../../../src/core/search/local/corpus-record.js";
import { openCorpusIndex } from "../../../../src/core/search/local/open-corpus-index.js";
import { SqliteCorpusIndex } from "../../../../src/core/search/local/sqlite-corpus-index.js";
import { openStore } from "../../../../src/server/store/open-store.js";
import { SQLITE_FILE_NAME } from "../../../../src/core/database/database-names.js";
import { makeNewCase } from "../../../server/store/conformance/fixtures.js";
import { describeCorpusConformance } from "./corpus-conformance.js";

const roots: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "medmmv-corpus-sqlite-"));
  roots.push(dir);
  return dir;
}
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

describeCorpusConformance(
  "sqlite",
  async () => {
    const dataDir = join(tempDir(), "data");
    return { open: () => openCorpusIndex({ databaseUrl: null, dataDir }) };
  },
  { fuzzRuns: 500 },
);

describe("SqliteCorpusIndex specifics", () => {
  it("lives in the case store's file, beside the case tables, with an FTS5 table over the chunks", async () => {
    const dataDir = tempDir();
    const store = await openStore({ databaseUrl: null, dataDir });
    const index = await openCorpusIndex({ databaseUrl: null, dataDir });
    try {
      await store.createCase(makeNewCase("c1"));
      await index.upsert("cardio", [prepareDocument({ id: "a", title: "Troponin", text: "A cardiac marker." })]);
      const peek = new Database(join(dataDir, SQLITE_FILE_NAME), { readonly: true });
      try {
        const names = (peek.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string; sql: string }>);
        expect(names.map((n) => n.name)).toEqual(expect.arrayContaining(["medmmv_cases", "medmmv_corpus_docs", "medmmv_corpus_chunks", "medmmv_corpus_fts"]));
        expect(names.find((n) => n.name === "medmmv_corpus_fts")!.sql).toMatch(/USING fts5/i);
      } finally {
        peek.close();
      }
      expect((await store.getCase("c1"))?.id).toBe("c1");
    } finally {
      await index.close();
      await store.close();
    }
  });

  it("tells whether a store file holds a corpus without creating the file", async () => {
    const dataDir = join(tempDir(), "not-yet");
    expect(SqliteCorpusIndex.hasCorpus(dataDir)).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
    const store = await openStore({ databaseUrl: null, dataDir });
    await store.close();
    expect(SqliteCorpusIndex.hasCorpus(dataDir)).toBe(false);
    const index = await openCorpusIndex({ databaseUrl: null, dataDir });
    expect(SqliteCorpusIndex.hasCorpus(dataDir)).toBe(false);
    await index.upsert("cardio", [prepareDocument({ id: "a", title: "Troponin", text: "A cardiac marker." })]);
    await index.close();
    expect(SqliteCorpusIndex.hasCorpus(dataDir)).toBe(true);
  });

  it("stats reports a driver error as STORE_FAILED, like upsert and search", async () => {
    const dataDir = tempDir();
    const index = await openCorpusIndex({ databaseUrl: null, dataDir });
    try {
      const other = new Database(join(dataDir, SQLITE_FILE_NAME));
      try {
        other.exec("DROP TABLE medmmv_corpus_docs");
      } finally {
        other.close();
      }
      await expect(index.stats()).rejects.toMatchObject({ name: "MedmmvError", code: "STORE_FAILED", message: "store operation corpus stats failed (SQLITE_ERROR)" });
    } finally {
      await index.close();
    }
  });

  it("reports STORE_FAILED when the data directory cannot be created", async () => {
    const blocker = join(tempDir(), "a-file");
    await import("node:fs/promises").then((fs) => fs.writeFile(blocker, "x"));
    await expect(openCorpusIndex({ databaseUrl: null, dataDir: join(blocker, "sub") })).rejects.toMatchObject({ name: "MedmmvError", code: "STORE_FAILED" });
  });
});
