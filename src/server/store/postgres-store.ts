import pg from "pg";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type { LoadedImage } from "../../core/contracts/clinical-case.js";
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type {
  CachedResponse,
  CaseEvent,
  CaseProgress,
  CaseRecord,
  CaseStatus,
  CardFeedbackOutcome,
  CaseStore,
  CaseSummary,
  ConversationTurn,
  ListCasesQuery,
  NewCase,
  NewTurn,
} from "./case-store.js";
import { PG_CONSTRAINTS, pgDdl, pgTables, type PgTables } from "./postgres-schema.js";
import { checkSchemaName } from "../../core/database/database-names.js";
import type { AccessEvent, AccessHead, AccessQuery, NewAccessEvent } from "./roles/access-trail.js";
import { ACCESS_COLUMNS, accessFromRow, accessRowValues, accessWhere, chainedEvent, checkAccessLimit, encodeAccessCursor, storableText, type AccessRow } from "./access-chain.js";
import type { AccessSigner } from "./access-signing.js";
import { caseSearchWhere, pathwayOf, SEARCH_COLUMN_NAMES, searchColumns, searchColumnValues, SUMMARY_SELECT, summaryFromSearchRow, type SearchDialect, type SearchRow } from "./case-search.js";
import { checkLimit, closedError, duplicateId, duplicateIdempotencyKey, duplicateTurn, eventFromRow, imageBytes, imageFromRow, imageHashes, missingImage, notFound, page, TERMINAL_SQL, recordFromRow, turnData, turnFromRow, statusCounts, type ImageRow } from "./store-rows.js";
import { nowIso } from "../../core/database/monotonic-clock.js";
import { storeFailed } from "../../core/database/database-errors.js";

export interface PostgresStoreOptions {
  connectionString: string;
  /** Schema for our tables and the checkpointer's; default "public". */
  schema?: string;
  /** Pool size; at least 2, because init() holds one connection while the checkpointer sets up on another. */
  poolMax?: number;
  /** Signs each access event (MEDMMV_AUDIT_SIGNING_KEY); null: events unsigned. */
  accessSigner?: AccessSigner | null;
}

const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
const jsonParam = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

type Row = Record<string, unknown>;
const CASE_COLUMNS =
  "id, owner, tenant, submitted_by, status, input, options, progress, result, full_graph, error, idempotency_key, request_hash, created_at, updated_at";

function caseFromPg(r: Row): CaseRecord {
  return recordFromRow({
    id: r.id as string,
    owner: r.owner as string,
    tenant: r.tenant as string,
    submitted_by: r.submitted_by as string,
    status: r.status as string,
    input: r.input,
    options: r.options,
    progress: r.progress,
    result: r.result,
    full_graph: r.full_graph,
    error: r.error,
    idempotency_key: (r.idempotency_key as string | null) ?? null,
    request_hash: (r.request_hash as string | null) ?? null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  });
}

/** `col = $n, …` for the search columns, numbered from `first`. */
const searchSet = (first: number): string => SEARCH_COLUMN_NAMES.map((n, i) => `${n} = $${first + i}`).join(", ");

interface PgError {
  code?: string;
  constraint?: string;
}

/**
 * Postgres store: one pg Pool shared with the PostgresSaver. Every multi-statement write
 * is one transaction; event sequence numbers come from a counter on the case row, whose
 * row lock serialises concurrent appends across connections and processes.
 */
export class PostgresStore implements CaseStore {
  readonly backend = "postgres" as const;
  readonly schema: string;
  readonly #t: PgTables;
  #pool: pg.Pool | null;
  readonly #saver: PostgresSaver;
  #ready = false;

  readonly #signer: AccessSigner | null;

  constructor(opts: PostgresStoreOptions) {
    this.#signer = opts.accessSigner ?? null;
    this.schema = checkSchemaName(opts.schema ?? "public");
    this.#t = pgTables(this.schema);
    const pool = new pg.Pool({
      connectionString: opts.connectionString,
      max: Math.max(2, opts.poolMax ?? 10),
      application_name: "medmmv",
    });
    // An idle client that loses its server emits here; without a listener that kills the
    // process. The next query on a fresh client reports the real problem.
    pool.on("error", () => undefined);
    // A checked-out client whose server goes away (a Postgres restart) emits "error" too; with
    // no listener that would kill the process mid-case. Its pending query rejects on its own.
    pool.on("connect", (client) => client.on("error", () => undefined));
    this.#pool = pool;
    this.#saver = new PostgresSaver(pool, undefined, { schema: this.schema });
  }

  async init(): Promise<void> {
    if (this.#ready) return;
    const pool = this.#live();
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (e) {
      throw storeFailed("init (connect)", e);
    }
    let broken: Error | undefined;
    try {
      // A session-level advisory lock (not _xact_) so it also covers the saver's setup,
      // which runs its own migrations on another pooled connection. Concurrent CREATE
      // IF NOT EXISTS can still collide in the catalogs; the lock makes starts serial.
      await client.query("SELECT pg_advisory_lock(hashtext($1))", [`medmmv-schema:${this.schema}`]);
      try {
        await client.query("BEGIN");
        await client.query(pgDdl(this.schema));
        // Finished cases stored before the search columns existed (or a later one, stopped_agents) get them from their result, once.
        const old = await client.query(`SELECT id, result FROM ${this.#t.cases} WHERE result IS NOT NULL AND (abstained IS NULL OR stopped_agents IS NULL)`);
        for (const r of old.rows as Row[]) {
          await client.query(`UPDATE ${this.#t.cases} SET ${searchSet(2)} WHERE id = $1`, [r.id, ...searchColumnValues(searchColumns(r.result as DiagnosisResult))]);
        }
        await client.query("COMMIT");
        await this.#saver.setup();
      } catch (e) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw e;
      } finally {
        await client.query("SELECT pg_advisory_unlock(hashtext($1))", [`medmmv-schema:${this.schema}`]).catch((e: Error) => {
          broken = e;
        });
      }
      this.#ready = true;
    } catch (e) {
      throw storeFailed("init", e);
    } finally {
      // A connection whose unlock failed may still hold the lock: drop it rather than pool it.
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = null;
    this.#ready = false;
    if (pool) await pool.end();
  }

  async ping(): Promise<void> {
    await this.#query("ping", "SELECT 1");
  }

  checkpointer(): PostgresSaver {
    if (!this.#pool || !this.#ready) throw closedError();
    return this.#saver;
  }

  async putImage(image: LoadedImage): Promise<void> {
    const bytes = imageBytes(image);
    await this.#query(
      "putImage",
      `INSERT INTO ${this.#t.images} (sha256, mime_type, bytes, width, height, created_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (sha256) DO NOTHING`,
      [image.sha256.toLowerCase(), image.mimeType, bytes, image.width ?? null, image.height ?? null, nowIso()],
    );
  }

  async getImage(sha256: string): Promise<LoadedImage | null> {
    const rows = await this.#query(
      "getImage",
      `SELECT sha256, mime_type, bytes, width, height FROM ${this.#t.images} WHERE sha256 = $1`,
      [sha256.toLowerCase()],
    );
    return rows[0] ? imageFromRow(rows[0] as unknown as ImageRow) : null;
  }

  async createCase(c: NewCase): Promise<CaseRecord> {
    const now = nowIso();
    try {
      return await this.#tx(async (client) => {
        const inserted = await client.query(
          `INSERT INTO ${this.#t.cases} (id, owner, status, input, options, idempotency_key, request_hash, created_at, updated_at, tenant, submitted_by, pathway)
           VALUES ($1, $2, 'queued', $3::jsonb, $4::jsonb, $5, $6, $7, $7, $8, $9, $10) RETURNING ${CASE_COLUMNS}`,
          [c.id, c.owner, jsonParam(c.input), jsonParam(c.options), c.idempotencyKey ?? null, c.requestHash ?? null, now, c.tenant ?? c.owner, c.submittedBy ?? "", pathwayOf(c.input)],
        );
        const shas = imageHashes(c).map((s) => s.toLowerCase());
        if (shas.length > 0) {
          await client.query(
            `INSERT INTO ${this.#t.caseImages} (case_id, sha256) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
            [c.id, shas],
          );
        }
        return caseFromPg(inserted.rows[0] as Row);
      });
    } catch (e) {
      const err = e as PgError;
      if (err.code === "23505" && err.constraint === PG_CONSTRAINTS.casesPkey) throw duplicateId(c.id, e);
      if (err.code === "23505" && err.constraint === PG_CONSTRAINTS.ownerIdempotency) throw duplicateIdempotencyKey(e);
      if (err.code === "23503") throw missingImage(e);
      throw storeFailed("createCase", e);
    }
  }

  async getCase(id: string): Promise<CaseRecord | null> {
    const rows = await this.#query("getCase", `SELECT ${CASE_COLUMNS} FROM ${this.#t.cases} WHERE id = $1`, [id]);
    return rows[0] ? caseFromPg(rows[0]) : null;
  }

  async findByIdempotencyKey(owner: string, key: string): Promise<CaseRecord | null> {
    const rows = await this.#query(
      "findByIdempotencyKey",
      `SELECT ${CASE_COLUMNS} FROM ${this.#t.cases} WHERE owner = $1 AND idempotency_key = $2`,
      [owner, key],
    );
    return rows[0] ? caseFromPg(rows[0]) : null;
  }

  async listCases(q: ListCasesQuery): Promise<{ items: CaseSummary[]; nextCursor: string | null }> {
    const limit = checkLimit(q.limit);
    const { sql, args } = this.#searchSql(q, limit);
    const rows = await this.#query("listCases", sql, args);
    const p = page(
      rows.map((r) => ({ ...(r as unknown as SearchRow), created_at: iso(r.created_at), updated_at: iso(r.updated_at) })),
      limit,
    );
    return { items: p.rows.map(summaryFromSearchRow), nextCursor: p.nextCursor };
  }

  /** The query plan of a search, for the bench (EXPLAIN). */
  async explainListCases(q: ListCasesQuery): Promise<string> {
    const { sql, args } = this.#searchSql(q, q.limit);
    const rows = await this.#query("explainListCases", `EXPLAIN ${sql}`, args);
    return rows.map((r) => String(r["QUERY PLAN"])).join("\n");
  }

  #searchSql(q: ListCasesQuery, limit: number): { sql: string; args: unknown[] } {
    const args: unknown[] = [];
    const param = (v: unknown) => (args.push(v), `$${args.length}`);
    const dialect: SearchDialect = { param, instant: (v) => `${param(v)}::timestamptz`, contains: (col, needle) => `strpos(${col}, ${param(needle)}) > 0` };
    const where = caseSearchWhere(q, dialect);
    return { sql: `SELECT ${SUMMARY_SELECT} FROM ${this.#t.cases} WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${param(limit + 1)}`, args };
  }

  async adoptCases(owner: string, tenant: string, submittedBy: string): Promise<number> {
    const rows = await this.#query("adoptCases", `UPDATE ${this.#t.cases} SET tenant = $2, submitted_by = $3 WHERE owner = $1 AND tenant = owner AND owner <> $2 RETURNING id`, [owner, tenant, submittedBy]);
    return rows.length;
  }

  async listCreatedBefore(before: string, limit: number): Promise<Array<{ id: string; tenant: string }>> {
    const rows = await this.#query("listCreatedBefore", `SELECT id, tenant FROM ${this.#t.cases} WHERE created_at < $1::timestamptz ORDER BY created_at ASC, id ASC LIMIT $2`, [before, limit]);
    return rows.map((r) => ({ id: r.id as string, tenant: r.tenant as string }));
  }

  /** The tenant's head row, locked FOR UPDATE, serialises appends across connections and processes. */
  async appendAccess(e: NewAccessEvent): Promise<AccessEvent> {
    try {
      return await this.#tx(async (client) => {
        const tenant = storableText(e.tenant);
        await client.query(`INSERT INTO ${this.#t.accessHeads} (tenant, last_seq, last_hash) VALUES ($1, 0, '') ON CONFLICT (tenant) DO NOTHING`, [tenant]);
        const head = (await client.query(`SELECT last_seq, last_hash FROM ${this.#t.accessHeads} WHERE tenant = $1 FOR UPDATE`, [tenant])).rows[0] as Row;
        const event = chainedEvent(e, { lastSeq: Number(head.last_seq), lastHash: head.last_hash as string }, nowIso(), this.#signer);
        const values = accessRowValues(event);
        await client.query(`INSERT INTO ${this.#t.accessEvents} (${ACCESS_COLUMNS}) VALUES (${values.map((_, i) => `$${i + 1}`).join(", ")})`, values);
        await client.query(`UPDATE ${this.#t.accessHeads} SET last_seq = $2, last_hash = $3 WHERE tenant = $1`, [tenant, event.seq, event.hash]);
        return event;
      });
    } catch (err) {
      throw storeFailed("appendAccess", err);
    }
  }

  async listAccess(q: AccessQuery): Promise<{ items: AccessEvent[]; nextCursor: string | null }> {
    const limit = checkAccessLimit(q.limit);
    const args: unknown[] = [];
    const where = accessWhere(q, (v) => (args.push(v), `$${args.length}`));
    args.push(limit + 1);
    const rows = await this.#query("listAccess", `SELECT ${ACCESS_COLUMNS} FROM ${this.#t.accessEvents} ${where} ORDER BY tenant, seq LIMIT $${args.length}`, args);
    const items = rows.slice(0, limit).map((r) => accessFromRow(r as unknown as AccessRow));
    return { items, nextCursor: rows.length > limit ? encodeAccessCursor(items[items.length - 1]!) : null };
  }

  async accessHeads(): Promise<AccessHead[]> {
    const rows = await this.#query("accessHeads", `SELECT tenant, last_seq, last_hash FROM ${this.#t.accessHeads} WHERE last_seq > 0 ORDER BY tenant`);
    return rows.map((r) => ({ tenant: r.tenant as string, lastSeq: Number(r.last_seq), lastHash: r.last_hash as string }));
  }

  async countCasesNotOwnedBy(owner: string): Promise<number> {
    const rows = await this.#query("countCasesNotOwnedBy", `SELECT COUNT(*) AS n FROM ${this.#t.cases} WHERE owner <> $1`, [owner]);
    return Number(rows[0]?.n ?? 0);
  }

  async countCasesByStatus(): Promise<Record<CaseStatus, number>> {
    const rows = await this.#query("countCasesByStatus", `SELECT status, COUNT(*) AS n FROM ${this.#t.cases} GROUP BY status`);
    return statusCounts(rows.map((r) => ({ status: r.status as CaseStatus, n: Number(r.n) })));
  }

  async listUnfinished(): Promise<CaseRecord[]> {
    const rows = await this.#query(
      "listUnfinished",
      `SELECT ${CASE_COLUMNS} FROM ${this.#t.cases} WHERE status IN ('queued','running') ORDER BY created_at ASC, id ASC`,
    );
    return rows.map(caseFromPg);
  }

  async listUnfinishedIds(): Promise<string[]> {
    const rows = await this.#query("listUnfinishedIds", `SELECT id FROM ${this.#t.cases} WHERE status IN ('queued','running') ORDER BY created_at ASC, id ASC`);
    return rows.map((r) => r.id as string);
  }

  async countRunStart(id: string): Promise<number | null> {
    const rows = await this.#query(
      "countRunStart",
      `UPDATE ${this.#t.cases} SET run_starts = run_starts + 1 WHERE id = $1 AND status IN ('queued','running') RETURNING run_starts`,
      [id],
    );
    return rows.length === 1 ? Number(rows[0]!.run_starts) : null;
  }

  async uncountRunStart(id: string): Promise<void> {
    await this.#query("uncountRunStart", `UPDATE ${this.#t.cases} SET run_starts = run_starts - 1 WHERE id = $1 AND run_starts > 0`, [id]);
  }

  async setFeedback(id: string, outcome: CardFeedbackOutcome): Promise<boolean> {
    return (await this.#query("setFeedback", `UPDATE ${this.#t.cases} SET feedback = $2 WHERE id = $1 RETURNING id`, [id, outcome])).length === 1;
  }

  async setStatus(id: string, status: CaseStatus, error?: { code: string; message: string } | null): Promise<boolean> {
    return this.#updateUnfinished("setStatus", id, "status = $2, error = $3::jsonb", [status, jsonParam(error ?? null)]);
  }

  async setProgress(id: string, progress: CaseProgress): Promise<void> {
    await this.#updateOne("setProgress", id, "progress = $2::jsonb", [jsonParam(progress)]);
  }

  async saveResult(
    id: string,
    result: DiagnosisResult,
    fullEvidenceGraph: Record<string, unknown> | null,
    finalEvent?: { type: string; data: Record<string, unknown> },
  ): Promise<CaseEvent | null> {
    if (!finalEvent) {
      await this.#updateUnfinished("saveResult", id, `status = $2, result = $3::jsonb, full_graph = $4::jsonb, error = $5::jsonb, ${searchSet(6)}`, [
        result.status,
        jsonParam(result),
        jsonParam(fullEvidenceGraph),
        jsonParam(result.error ?? null),
        ...searchColumnValues(searchColumns(result)),
      ]);
      return null;
    }
    // One statement: the result and its final event land together or not at all.
    const rows = await this.#query(
      "saveResult",
      `WITH saved AS (
         UPDATE ${this.#t.cases} SET status = $2, result = $3::jsonb, full_graph = $4::jsonb, error = $5::jsonb, updated_at = $8, last_seq = last_seq + 1, ${searchSet(9)}
         WHERE id = $1 AND status NOT IN (${TERMINAL_SQL}) RETURNING last_seq
       )
       INSERT INTO ${this.#t.events} (case_id, seq, type, data, at)
       SELECT $1, last_seq, $6, $7::jsonb, $8 FROM saved
       RETURNING case_id, seq, type, data, at`,
      [id, result.status, jsonParam(result), jsonParam(fullEvidenceGraph), jsonParam(result.error ?? null), finalEvent.type, jsonParam(finalEvent.data), nowIso(), ...searchColumnValues(searchColumns(result))],
    );
    const r = rows[0];
    if (!r) {
      if (await this.getCase(id)) return null; // finished already: the first result stands
      throw notFound(id);
    }
    return eventFromRow({ case_id: r.case_id as string, seq: r.seq as number, type: r.type as string, data: r.data, at: iso(r.at) });
  }

  async pruneCheckpoints(id: string): Promise<void> {
    for (const table of this.#t.checkpointTables) await this.#query("pruneCheckpoints", `DELETE FROM ${table} WHERE thread_id = $1`, [id]);
  }

  async deleteCase(id: string): Promise<boolean> {
    try {
      return await this.#tx(async (client) => {
        const links = await client.query(`SELECT sha256 FROM ${this.#t.caseImages} WHERE case_id = $1`, [id]);
        // Checkpoints go even when the case row is already gone: they are useless without it.
        for (const table of this.#t.checkpointTables) {
          await client.query(`DELETE FROM ${table} WHERE thread_id = $1`, [id]);
        }
        // Model replies the case's calls cached quote its notes: they go with it.
        await client.query(`DELETE FROM ${this.#t.cache} WHERE case_id = $1`, [id]);
        // Events and image links go with the case (ON DELETE CASCADE).
        const removed = ((await client.query(`DELETE FROM ${this.#t.cases} WHERE id = $1`, [id])).rowCount ?? 0) > 0;
        const shas = links.rows.map((r: Row) => r.sha256 as string);
        if (shas.length > 0) {
          // A case created concurrently may link one of these images between our check and
          // the delete; the foreign key then refuses, and keeping the image is the right outcome.
          await client.query("SAVEPOINT orphan_images");
          try {
            await client.query(
              `DELETE FROM ${this.#t.images} i WHERE i.sha256 = ANY($1::text[])
               AND NOT EXISTS (SELECT 1 FROM ${this.#t.caseImages} l WHERE l.sha256 = i.sha256)`,
              [shas],
            );
            await client.query("RELEASE SAVEPOINT orphan_images");
          } catch (e) {
            if ((e as PgError).code !== "23503") throw e;
            await client.query("ROLLBACK TO SAVEPOINT orphan_images");
          }
        }
        return removed;
      });
    } catch (e) {
      throw storeFailed("deleteCase", e);
    }
  }

  async appendEvent(caseId: string, type: string, data: Record<string, unknown>, progress?: CaseProgress): Promise<CaseEvent> {
    // One statement: the UPDATE takes the case row lock, so concurrent appends queue up
    // and each sees the previous counter value. Progress, when given, changes in the same row.
    const at = nowIso();
    const rows = await this.#query(
      "appendEvent",
      `WITH bumped AS (
         UPDATE ${this.#t.cases}
            SET last_seq = last_seq + 1${progress ? ", progress = $5::jsonb, updated_at = $4" : ""}
          WHERE id = $1 RETURNING last_seq
       )
       INSERT INTO ${this.#t.events} (case_id, seq, type, data, at)
       SELECT $1, last_seq, $2, $3::jsonb, $4 FROM bumped
       RETURNING case_id, seq, type, data, at`,
      progress ? [caseId, type, jsonParam(data), at, jsonParam(progress)] : [caseId, type, jsonParam(data), at],
    );
    const r = rows[0];
    if (!r) throw notFound(caseId);
    return eventFromRow({ case_id: r.case_id as string, seq: r.seq as number, type: r.type as string, data: r.data, at: iso(r.at) });
  }

  async listEvents(caseId: string, afterSeq = 0): Promise<CaseEvent[]> {
    const rows = await this.#query(
      "listEvents",
      `SELECT case_id, seq, type, data, at FROM ${this.#t.events} WHERE case_id = $1 AND seq > $2 ORDER BY seq`,
      [caseId, afterSeq],
    );
    return rows.map((r) =>
      eventFromRow({ case_id: r.case_id as string, seq: r.seq as number, type: r.type as string, data: r.data, at: iso(r.at) }),
    );
  }

  async addTurn(caseId: string, turn: NewTurn): Promise<ConversationTurn> {
    let rows: Row[];
    try {
      const res = await this.#live().query(
        `INSERT INTO ${this.#t.turns} (case_id, turn, data, at)
         SELECT id, $2, $3::jsonb, $4 FROM ${this.#t.cases} WHERE id = $1
         RETURNING case_id, turn, data, at`,
        [caseId, turn.turn, jsonParam(turnData(turn)), nowIso()],
      );
      rows = res.rows as Row[];
    } catch (e) {
      const err = e as PgError;
      // The case can be deleted between the SELECT and the insert's foreign-key check.
      if (err.code === "23503") throw notFound(caseId);
      if (err.code === "23505") throw duplicateTurn(caseId, turn.turn, e);
      throw storeFailed("addTurn", e);
    }
    const r = rows[0];
    if (!r) throw notFound(caseId);
    return turnFromRow({ case_id: r.case_id as string, turn: r.turn as number, data: r.data, at: iso(r.at) });
  }

  async listTurns(caseId: string): Promise<ConversationTurn[]> {
    const rows = await this.#query("listTurns", `SELECT case_id, turn, data, at FROM ${this.#t.turns} WHERE case_id = $1 ORDER BY turn`, [caseId]);
    return rows.map((r) => turnFromRow({ case_id: r.case_id as string, turn: r.turn as number, data: r.data, at: iso(r.at) }));
  }

  /**
   * Prune, then insert-if-absent: the insert is the atomic check, so of two processes
   * inserting the same id, one gets the row back. An expired token's row is gone by then.
   */
  async useTokenId(issuer: string, tokenId: string, expiresAtMs: number, nowMs: number): Promise<boolean> {
    await this.#query("useTokenId", `DELETE FROM ${this.#t.usedTokenIds} WHERE expires_ms <= $1`, [nowMs]);
    const rows = await this.#query(
      "useTokenId",
      `INSERT INTO ${this.#t.usedTokenIds} (issuer, token_id, expires_ms) VALUES ($1, $2, $3)
       ON CONFLICT (issuer, token_id) DO NOTHING
       RETURNING 1 AS used`,
      [issuer, tokenId, expiresAtMs],
    );
    return rows.length === 1;
  }

  async getCachedResponse(key: string): Promise<CachedResponse | null> {
    const rows = await this.#query("getCachedResponse", `SELECT value, created_at FROM ${this.#t.cache} WHERE key = $1`, [key]);
    const r = rows[0];
    return r ? { value: r.value as Record<string, unknown>, createdAt: iso(r.created_at) } : null;
  }

  /** First write wins: a cached reply never changes under a key once stored. */
  async putCachedResponse(key: string, value: Record<string, unknown>, caseId: string | null = null): Promise<void> {
    await this.#query(
      "putCachedResponse",
      `INSERT INTO ${this.#t.cache} (key, value, created_at, case_id) VALUES ($1, $2::jsonb, $3, $4) ON CONFLICT (key) DO NOTHING`,
      [key, jsonParam(value), nowIso(), caseId],
    );
  }

  /** `#updateOne` for a case that is not finished: false (nothing written) when it is terminal already. */
  async #updateUnfinished(op: string, id: string, set: string, args: unknown[]): Promise<boolean> {
    const params = [id, ...args, nowIso()];
    const rows = await this.#query(op, `UPDATE ${this.#t.cases} SET ${set}, updated_at = $${params.length} WHERE id = $1 AND status NOT IN (${TERMINAL_SQL}) RETURNING id`, params);
    if (rows.length > 0) return true;
    if (await this.getCase(id)) return false;
    throw notFound(id);
  }

  async #updateOne(op: string, id: string, set: string, args: unknown[]): Promise<void> {
    const params = [id, ...args, nowIso()];
    const rows = await this.#query(
      op,
      `UPDATE ${this.#t.cases} SET ${set}, updated_at = $${params.length} WHERE id = $1 RETURNING id`,
      params,
    );
    if (rows.length === 0) throw notFound(id);
  }

  #live(): pg.Pool {
    if (!this.#pool) throw closedError();
    return this.#pool;
  }

  async #query(op: string, sql: string, params: unknown[] = []): Promise<Row[]> {
    try {
      const res = await this.#live().query(sql, params);
      return res.rows as Row[];
    } catch (e) {
      throw storeFailed(op, e);
    }
  }

  /** Runs fn in one transaction; driver errors reach the caller untouched for mapping. */
  async #tx<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#live().connect();
    try {
      await client.query("BEGIN");
      const out = await fn(client);
      await client.query("COMMIT");
      return out;
    } catch (e) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }
}
