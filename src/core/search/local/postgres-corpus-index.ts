import pg from "pg";
import { MedmmvError } from "../../contracts/errors.js";
import { pgCorpusDdl, pgCorpusTables } from "./postgres-corpus-schema.js";
import { checkSchemaName } from "../../database/database-names.js";
import { storeFailed } from "../../database/database-errors.js";
import type { CorpusHit, CorpusIndex, CorpusStats, UpsertOutcome } from "./corpus-index.js";
import type { PreparedDocument } from "./corpus-record.js";
import { tsQuery } from "./query-builder.js";

export interface PostgresCorpusIndexOptions {
  connectionString: string;
  /** Schema of the tables (default "public"), the case store's. */
  schema?: string;
}

/**
 * The corpus in Postgres: a stored, weighted tsvector per chunk behind a GIN index,
 * ranked with ts_rank. Same contract as the SQLite FTS5 index.
 */
export class PostgresCorpusIndex implements CorpusIndex {
  readonly backend = "postgres" as const;
  readonly #schema: string;
  readonly #t: { docs: string; chunks: string };
  #pool: pg.Pool | null = null;

  constructor(private readonly opts: PostgresCorpusIndexOptions) {
    this.#schema = checkSchemaName(opts.schema ?? "public");
    this.#t = pgCorpusTables(this.#schema);
  }

  /**
   * Whether the schema holds an indexed corpus, without creating anything: the default
   * search provider is chosen from this at every boot, and a yes/no needs no tables made
   * and no aggregate over every document.
   */
  static async hasCorpus(opts: PostgresCorpusIndexOptions): Promise<boolean> {
    const t = pgCorpusTables(checkSchemaName(opts.schema ?? "public"));
    const client = new pg.Client({ connectionString: opts.connectionString, connectionTimeoutMillis: 10_000 });
    client.on("error", () => undefined); // a connection dropped by the server; the query below reports it
    try {
      await client.connect();
      const table = await client.query<{ present: boolean }>("SELECT to_regclass($1) IS NOT NULL AS present", [t.chunks]);
      if (!table.rows[0]?.present) return false;
      return (await client.query(`SELECT 1 FROM ${t.chunks} LIMIT 1`)).rows.length > 0;
    } catch (e) {
      throw storeFailed("corpus check", e);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  async init(): Promise<void> {
    if (this.#pool) return;
    // A CLI command must be able to exit while idle connections linger.
    const pool = new pg.Pool({ connectionString: this.opts.connectionString, max: 4, allowExitOnIdle: true, connectionTimeoutMillis: 10_000 });
    pool.on("error", () => undefined); // an idle client dropped by the server; the next query reconnects
    try {
      const client = await pool.connect();
      try {
        // Several processes may create the tables at once: serialise the DDL.
        await client.query("SELECT pg_advisory_lock(hashtext($1))", [`medmmv-corpus:${this.#schema}`]);
        try {
          await client.query(pgCorpusDdl(this.#schema));
        } finally {
          await client.query("SELECT pg_advisory_unlock(hashtext($1))", [`medmmv-corpus:${this.#schema}`]);
        }
      } finally {
        client.release();
      }
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw storeFailed("corpus init", e);
    }
    this.#pool = pool;
  }

  #p(): pg.Pool {
    if (!this.#pool) throw new MedmmvError("STORE_FAILED", "the corpus index is closed (or was never initialised)");
    return this.#pool;
  }

  async upsert(corpus: string, docs: PreparedDocument[]): Promise<UpsertOutcome> {
    const out: UpsertOutcome = { added: 0, updated: 0, unchanged: 0 };
    if (docs.length === 0) return out;
    const client = await this.#p().connect().catch((e: unknown) => {
      throw storeFailed("corpus upsert", e);
    });
    try {
      await client.query("BEGIN");
      const had = await client.query<{ id: string; content_hash: string }>(`SELECT id, content_hash FROM ${this.#t.docs} WHERE corpus = $1 AND id = ANY($2::text[])`, [
        corpus,
        docs.map((d) => d.id),
      ]);
      const hashes = new Map(had.rows.map((r) => [r.id, r.content_hash]));
      for (const d of docs) {
        const prev = hashes.get(d.id);
        if (prev === d.contentHash) {
          out.unchanged++;
          continue;
        }
        if (prev !== undefined) await client.query(`DELETE FROM ${this.#t.chunks} WHERE corpus = $1 AND doc_id = $2`, [corpus, d.id]);
        await client.query(
          `INSERT INTO ${this.#t.docs} (corpus, id, title, url, source, content_hash, chunks, indexed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, now())
           ON CONFLICT (corpus, id) DO UPDATE SET title = excluded.title, url = excluded.url, source = excluded.source,
             content_hash = excluded.content_hash, chunks = excluded.chunks, indexed_at = excluded.indexed_at`,
          [corpus, d.id, d.title, d.url, d.source, d.contentHash, d.chunks.length],
        );
        await client.query(
          `INSERT INTO ${this.#t.chunks} (corpus, doc_id, chunk, title, text)
           SELECT $1, $2, n - 1, $3, t FROM unnest($4::text[]) WITH ORDINALITY AS u(t, n)`,
          [corpus, d.id, d.title, d.chunks],
        );
        hashes.set(d.id, d.contentHash);
        if (prev !== undefined) out.updated++;
        else out.added++;
      }
      await client.query("COMMIT");
      return out;
    } catch (e) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw storeFailed("corpus upsert", e);
    } finally {
      client.release();
    }
  }

  async search(text: string, opts: { limit: number; corpus?: string }): Promise<CorpusHit[]> {
    const query = tsQuery(text);
    if (!query) return [];
    try {
      const res = await this.#p().query<{ corpus: string; doc_id: string; chunk: number; title: string; text: string; url: string | null; source: string | null; score: number }>(
        `SELECT c.corpus, c.doc_id, c.chunk, c.title, c.text, d.url, d.source, ts_rank(c.tsv, q.query)::float8 AS score
         FROM (SELECT to_tsquery('english', $1) AS query) q, ${this.#t.chunks} c
         JOIN ${this.#t.docs} d ON d.corpus = c.corpus AND d.id = c.doc_id
         WHERE c.tsv @@ q.query AND ($2::text IS NULL OR c.corpus = $2)
         ORDER BY score DESC, c.corpus, c.doc_id, c.chunk
         LIMIT $3`,
        [query, opts.corpus ?? null, opts.limit],
      );
      return res.rows.map((r) => ({ corpus: r.corpus, docId: r.doc_id, chunk: r.chunk, title: r.title, text: r.text, url: r.url, source: r.source, score: r.score }));
    } catch (e) {
      throw storeFailed("corpus search", e);
    }
  }

  async stats(): Promise<CorpusStats[]> {
    try {
      const res = await this.#p().query<{ corpus: string; documents: number; chunks: number; last: Date | null }>(
        `SELECT corpus, count(*)::int AS documents, sum(chunks)::int AS chunks, max(indexed_at) AS last FROM ${this.#t.docs} GROUP BY corpus ORDER BY corpus`,
      );
      return res.rows.map((r) => ({ corpus: r.corpus, documents: r.documents, chunks: r.chunks, lastIndexedAt: r.last ? r.last.toISOString() : null }));
    } catch (e) {
      throw storeFailed("corpus stats", e);
    }
  }

  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = null;
    await pool?.end();
  }
}
