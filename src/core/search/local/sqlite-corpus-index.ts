import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { MedmmvError } from "../../contracts/errors.js";
import { SQLITE_CORPUS_DDL } from "./sqlite-corpus-schema.js";
import { SQLITE_FILE_NAME } from "../../database/database-names.js";
import { nowIso } from "../../database/monotonic-clock.js";
import { storeFailed } from "../../database/database-errors.js";
import type { CorpusHit, CorpusIndex, CorpusStats, UpsertOutcome } from "./corpus-index.js";
import type { PreparedDocument } from "./corpus-record.js";
import { fts5Query } from "./query-builder.js";

/** Title matches count twice a body match (bm25 column weights: title, text). */
const BM25_WEIGHTS = "2.0, 1.0";

interface HitRow {
  corpus: string;
  doc_id: string;
  chunk: number;
  title: string;
  text: string;
  url: string | null;
  source: string | null;
  rank: number;
}

/**
 * The corpus in the embedded store's SQLite file, searched with FTS5 and ranked by BM25.
 * Its own connection (WAL, busy timeout) beside the case store's, like a second process.
 */
export class SqliteCorpusIndex implements CorpusIndex {
  readonly backend = "sqlite" as const;
  readonly file: string;
  #db: Database.Database | null = null;

  constructor(private readonly dataDir: string) {
    this.file = join(dataDir, SQLITE_FILE_NAME);
  }

  /**
   * Whether a store file under dataDir holds an indexed corpus, without creating anything
   * (the default search provider is chosen from this at boot, synchronously).
   */
  static hasCorpus(dataDir: string): boolean {
    const file = join(dataDir, SQLITE_FILE_NAME);
    if (!existsSync(file)) return false;
    let db: Database.Database | undefined;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true });
      db.pragma("busy_timeout = 2000");
      const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'medmmv_corpus_chunks'").get();
      return table !== undefined && db.prepare("SELECT 1 FROM medmmv_corpus_chunks LIMIT 1").get() !== undefined;
    } catch {
      return false;
    } finally {
      db?.close();
    }
  }

  async init(): Promise<void> {
    if (this.#db) return;
    let db: Database.Database | undefined;
    try {
      mkdirSync(this.dataDir, { recursive: true });
      db = new Database(this.file);
      db.pragma("busy_timeout = 5000");
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      const conn = db;
      conn.transaction(() => conn.exec(SQLITE_CORPUS_DDL)).immediate();
      this.#db = conn;
    } catch (e) {
      if (db?.open) db.close();
      throw storeFailed("corpus init", e);
    }
  }

  #conn(): Database.Database {
    if (!this.#db) throw new MedmmvError("STORE_FAILED", "the corpus index is closed (or was never initialised)");
    return this.#db;
  }

  async upsert(corpus: string, docs: PreparedDocument[]): Promise<UpsertOutcome> {
    const db = this.#conn();
    const out: UpsertOutcome = { added: 0, updated: 0, unchanged: 0 };
    const existing = db.prepare<[string, string], { content_hash: string }>("SELECT content_hash FROM medmmv_corpus_docs WHERE corpus = ? AND id = ?");
    const dropChunks = db.prepare("DELETE FROM medmmv_corpus_chunks WHERE corpus = ? AND doc_id = ?");
    const putDoc = db.prepare(
      `INSERT INTO medmmv_corpus_docs (corpus, id, title, url, source, content_hash, chunks, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (corpus, id) DO UPDATE SET title = excluded.title, url = excluded.url, source = excluded.source,
         content_hash = excluded.content_hash, chunks = excluded.chunks, indexed_at = excluded.indexed_at`,
    );
    const putChunk = db.prepare("INSERT INTO medmmv_corpus_chunks (corpus, doc_id, chunk, title, text) VALUES (?, ?, ?, ?, ?)");
    try {
      db.transaction(() => {
        for (const d of docs) {
          const had = existing.get(corpus, d.id);
          if (had?.content_hash === d.contentHash) {
            out.unchanged++;
            continue;
          }
          if (had) dropChunks.run(corpus, d.id);
          putDoc.run(corpus, d.id, d.title, d.url, d.source, d.contentHash, d.chunks.length, nowIso());
          d.chunks.forEach((text, i) => putChunk.run(corpus, d.id, i, d.title, text));
          if (had) out.updated++;
          else out.added++;
        }
      }).immediate();
    } catch (e) {
      throw storeFailed("corpus upsert", e);
    }
    return out;
  }

  async search(text: string, opts: { limit: number; corpus?: string }): Promise<CorpusHit[]> {
    const match = fts5Query(text);
    if (!match) return [];
    const db = this.#conn();
    try {
      const rows = db
        .prepare<[string, string | null, string | null, number], HitRow>(
          `SELECT c.corpus, c.doc_id, c.chunk, c.title, c.text, d.url, d.source, bm25(medmmv_corpus_fts, ${BM25_WEIGHTS}) AS rank
           FROM medmmv_corpus_fts
           JOIN medmmv_corpus_chunks c ON c.id = medmmv_corpus_fts.rowid
           JOIN medmmv_corpus_docs d ON d.corpus = c.corpus AND d.id = c.doc_id
           WHERE medmmv_corpus_fts MATCH ? AND (? IS NULL OR c.corpus = ?)
           ORDER BY rank, c.corpus, c.doc_id, c.chunk
           LIMIT ?`,
        )
        .all(match, opts.corpus ?? null, opts.corpus ?? null, opts.limit);
      // bm25() is lower for better matches; hits carry "higher is better" like ts_rank.
      return rows.map((r) => ({ corpus: r.corpus, docId: r.doc_id, chunk: r.chunk, title: r.title, text: r.text, url: r.url, source: r.source, score: -r.rank }));
    } catch (e) {
      throw storeFailed("corpus search", e);
    }
  }

  async stats(): Promise<CorpusStats[]> {
    const db = this.#conn();
    try {
      const rows = db
        .prepare<[], { corpus: string; documents: number; chunks: number; last: string | null }>(
          "SELECT corpus, count(*) AS documents, sum(chunks) AS chunks, max(indexed_at) AS last FROM medmmv_corpus_docs GROUP BY corpus ORDER BY corpus",
        )
        .all();
      return rows.map((r) => ({ corpus: r.corpus, documents: r.documents, chunks: r.chunks, lastIndexedAt: r.last }));
    } catch (e) {
      throw storeFailed("corpus stats", e);
    }
  }

  async close(): Promise<void> {
    const db = this.#db;
    this.#db = null;
    if (db?.open) db.close();
  }
}
