import { SQLITE_FILE_NAME } from "../../core/database/database-names.js";
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import type { LoadedImage } from "../../core/contracts/clinical-case.js";
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import { isMedmmvError } from "../../core/contracts/errors.js";
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
import { SQLITE_ADDED_CASE_COLUMNS, SQLITE_ADDED_COLUMNS, SQLITE_CHECKPOINT_TABLES, SQLITE_DDL, SQLITE_DDL_AFTER_ADDED_COLUMNS, SQLITE_DDL_AFTER_COLUMNS, SQLITE_SCHEMA_VERSION } from "./sqlite-schema.js";
import type { AccessSigner } from "./access-signing.js";
import type { AccessEvent, AccessHead, AccessQuery, NewAccessEvent } from "./roles/access-trail.js";
import { ACCESS_COLUMNS, accessFromRow, accessRowValues, accessWhere, chainedEvent, checkAccessLimit, encodeAccessCursor, storableText, type AccessRow } from "./access-chain.js";
import { caseSearchWhere, pathwayOf, SEARCH_COLUMN_NAMES, searchColumns, searchColumnValues, SUMMARY_SELECT, summaryFromSearchRow, type SearchRow } from "./case-search.js";
import { checkLimit, closedError, duplicateId, duplicateIdempotencyKey, duplicateTurn, eventFromRow, imageBytes, imageFromRow, imageHashes, missingImage, notFound, page, TERMINAL_SQL, recordFromRow, turnData, turnFromRow, statusCounts, type ImageRow } from "./store-rows.js";
import { nowIso } from "../../core/database/monotonic-clock.js";
import { storeFailed } from "../../core/database/database-errors.js";


export interface SqliteStoreOptions {
  /** Directory for the database file; created if missing. */
  dataDir: string;
  /** Signs each access event (MEDMMV_AUDIT_SIGNING_KEY); null: events unsigned. */
  accessSigner?: AccessSigner | null;
}

/** SqliteSaver creates its tables lazily; we want them before the first deleteCase. */
class StoreSqliteSaver extends SqliteSaver {
  /** `prepare`: the store's own, so the saver reuses its statements (see withPrepare). */
  constructor(db: Database.Database, prepare: Prepare) {
    super(withPrepare(db, prepare));
  }

  ensureTables(): void {
    this.setup();
  }
}

type Prepare = (sql: string) => Database.Statement;

/** One connection's `prepare`, handing back the statement it prepared before for the same SQL. */
function preparedOnce(db: Database.Database): Prepare {
  const statements = new Map<string, Database.Statement>();
  return (sql) => {
    let stmt = statements.get(sql);
    if (!stmt) {
      stmt = db.prepare(sql);
      statements.set(sql, stmt);
    }
    return stmt;
  };
}

/**
 * The connection as the checkpointer sees it, with the store's `prepare`. SqliteSaver
 * prepares its INSERTs anew on every checkpoint and every task's writes (several per
 * superstep of every case); a statement is reusable once run, and the saver only runs them
 * (`run`, `get`, `all`, never `iterate`, which would hold one busy).
 */
function withPrepare(db: Database.Database, prepare: Prepare): Database.Database {
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return prepare;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

type Json = string | null;
interface RawCaseRow {
  id: string;
  owner: string;
  tenant: string;
  submitted_by: string;
  status: string;
  input: string;
  options: string;
  progress: Json;
  result: Json;
  full_graph: Json;
  error: Json;
  idempotency_key: string | null;
  request_hash: string | null;
  created_at: string;
  updated_at: string;
}

const parse = (s: Json): unknown => (s === null ? null : JSON.parse(s));
const toJson = (v: unknown): Json => (v === null || v === undefined ? null : JSON.stringify(v));

function caseFromRaw(r: RawCaseRow): CaseRecord {
  return recordFromRow({
    ...r,
    input: parse(r.input),
    options: parse(r.options),
    progress: parse(r.progress),
    result: parse(r.result),
    full_graph: parse(r.full_graph),
    error: parse(r.error),
  });
}

const CASE_COLUMNS =
  "id, owner, tenant, submitted_by, status, input, options, progress, result, full_graph, error, idempotency_key, request_hash, created_at, updated_at";

const SEARCH_SET = SEARCH_COLUMN_NAMES.map((n) => `${n} = ?`).join(", ");

/** Finished cases stored before the search columns existed (or a later one, stopped_agents) get them from their result, once. */
function backfillSearchColumns(db: Database.Database): void {
  const rows = db.prepare("SELECT id, result FROM medmmv_cases WHERE result IS NOT NULL AND (abstained IS NULL OR stopped_agents IS NULL)").all() as Array<{ id: string; result: string }>;
  const update = db.prepare(`UPDATE medmmv_cases SET ${SEARCH_SET} WHERE id = ?`);
  for (const r of rows) update.run(...searchColumnValues(searchColumns(JSON.parse(r.result) as DiagnosisResult)), r.id);
}

/**
 * Embedded default store: one better-sqlite3 connection per store object, WAL so readers
 * never block the writer and several processes can share the file. better-sqlite3 is
 * synchronous, so every method is one short transaction; multi-statement writes use
 * BEGIN IMMEDIATE so they take the write lock up front (and wait on busy_timeout)
 * instead of failing on a read→write upgrade.
 */
/** How long a start waits for other processes holding the file (the busy timeout, too). */
const INIT_BUSY_WAIT_MS = 5_000;

export class SqliteStore implements CaseStore {
  readonly backend = "sqlite" as const;
  readonly file: string;
  readonly #dataDir: string;
  #db: Database.Database | null = null;
  #saver: StoreSqliteSaver | null = null;
  #prepare: Prepare | null = null;

  readonly #signer: AccessSigner | null;

  constructor(opts: SqliteStoreOptions) {
    this.#dataDir = opts.dataDir;
    this.#signer = opts.accessSigner ?? null;
    this.file = join(opts.dataDir, SQLITE_FILE_NAME);
  }

  async init(): Promise<void> {
    if (this.#db) return;
    // Processes starting together on a fresh file: switching it to WAL needs a moment alone
    // with it, and SQLite may answer SQLITE_BUSY at once there instead of waiting out the
    // busy timeout. Such a start is tried again, for as long as a busy timeout would wait.
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        this.#open();
        return;
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        const busy = typeof code === "string" && code.startsWith("SQLITE_BUSY");
        if (!busy || Date.now() - started > INIT_BUSY_WAIT_MS) throw storeFailed("init", e);
        await new Promise((r) => setTimeout(r, Math.min(200, 10 * attempt) * (0.5 + Math.random())));
      }
    }
  }

  #open(): void {
    let db: Database.Database | undefined;
    try {
      mkdirSync(this.#dataDir, { recursive: true });
      // Case text lives in the file: readable by this user alone. SQLite creates the WAL and
      // SHM files with the main file's permissions. An older file is narrowed too.
      closeSync(openSync(this.file, "a", 0o600));
      chmodSync(this.file, 0o600);
      db = new Database(this.file);
      // busy_timeout first: the journal_mode switch itself may have to wait for another process.
      db.pragma(`busy_timeout = ${INIT_BUSY_WAIT_MS}`);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma("foreign_keys = ON");
      // Deleted rows (a deleted or purged case's notes) are overwritten with zeros, in their page
      // and in freed pages, instead of lingering in free space until the page is reused.
      db.pragma("secure_delete = ON");
      const conn = db;
      conn
        .transaction(() => {
          conn.exec(SQLITE_DDL);
          // A file from an older version: CREATE TABLE IF NOT EXISTS left its table as it was.
          const have = new Set((conn.pragma("table_info(medmmv_cases)") as Array<{ name: string }>).map((c) => c.name));
          for (const [name, type] of SQLITE_ADDED_CASE_COLUMNS) if (!have.has(name)) conn.exec(`ALTER TABLE medmmv_cases ADD COLUMN ${name} ${type}`);
          conn.exec(SQLITE_DDL_AFTER_COLUMNS);
          for (const [table, columns] of Object.entries(SQLITE_ADDED_COLUMNS)) {
            const present = new Set((conn.pragma(`table_info(${table})`) as Array<{ name: string }>).map((c) => c.name));
            for (const [name, type] of columns) if (!present.has(name)) conn.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${type}`);
          }
          conn.exec(SQLITE_DDL_AFTER_ADDED_COLUMNS);
          backfillSearchColumns(conn);
          conn.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`);
        })
        .immediate();
      const prepare = preparedOnce(conn);
      const saver = new StoreSqliteSaver(conn, prepare);
      saver.ensureTables();
      this.#db = conn;
      this.#prepare = prepare;
      this.#saver = saver;
    } catch (e) {
      if (db?.open) db.close();
      throw e;
    }
  }

  async close(): Promise<void> {
    const db = this.#db;
    this.#db = null;
    this.#saver = null;
    this.#prepare = null;
    if (db?.open) db.close();
  }

  async ping(): Promise<void> {
    this.#run("ping", () => this.#stmt("SELECT 1").get());
  }

  checkpointer(): SqliteSaver {
    if (!this.#saver) throw closedError();
    return this.#saver;
  }

  async putImage(image: LoadedImage): Promise<void> {
    const bytes = imageBytes(image);
    this.#run("putImage", () =>
      this.#stmt(
        `INSERT INTO medmmv_images (sha256, mime_type, bytes, width, height, created_at)
         VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING`,
      ).run(image.sha256.toLowerCase(), image.mimeType, bytes, image.width ?? null, image.height ?? null, nowIso()),
    );
  }

  async getImage(sha256: string): Promise<LoadedImage | null> {
    const row = this.#run("getImage", () =>
      this.#stmt("SELECT sha256, mime_type, bytes, width, height FROM medmmv_images WHERE sha256 = ?").get(
        sha256.toLowerCase(),
      ),
    ) as ImageRow | undefined;
    return row ? imageFromRow(row) : null;
  }

  async createCase(c: NewCase): Promise<CaseRecord> {
    const now = nowIso();
    const insert = () => {
      this.#stmt(
        `INSERT INTO medmmv_cases (id, owner, tenant, submitted_by, pathway, status, input, options, idempotency_key, request_hash, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)`,
      ).run(c.id, c.owner, c.tenant ?? c.owner, c.submittedBy ?? "", pathwayOf(c.input), toJson(c.input), toJson(c.options), c.idempotencyKey ?? null, c.requestHash ?? null, now, now);
      const link = this.#stmt("INSERT INTO medmmv_case_images (case_id, sha256) VALUES (?, ?)");
      for (const sha of imageHashes(c)) link.run(c.id, sha.toLowerCase());
      return this.#stmt(`SELECT ${CASE_COLUMNS} FROM medmmv_cases WHERE id = ?`).get(c.id) as RawCaseRow;
    };
    try {
      return caseFromRaw(this.#write(insert));
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (code === "SQLITE_CONSTRAINT_PRIMARYKEY") throw duplicateId(c.id, e);
      if (code === "SQLITE_CONSTRAINT_UNIQUE") throw duplicateIdempotencyKey(e);
      if (code === "SQLITE_CONSTRAINT_FOREIGNKEY") throw missingImage(e);
      throw storeFailed("createCase", e);
    }
  }

  async getCase(id: string): Promise<CaseRecord | null> {
    const row = this.#run("getCase", () =>
      this.#stmt(`SELECT ${CASE_COLUMNS} FROM medmmv_cases WHERE id = ?`).get(id),
    ) as RawCaseRow | undefined;
    return row ? caseFromRaw(row) : null;
  }

  async findByIdempotencyKey(owner: string, key: string): Promise<CaseRecord | null> {
    const row = this.#run("findByIdempotencyKey", () =>
      this.#stmt(`SELECT ${CASE_COLUMNS} FROM medmmv_cases WHERE owner = ? AND idempotency_key = ?`).get(owner, key),
    ) as RawCaseRow | undefined;
    return row ? caseFromRaw(row) : null;
  }

  async listCases(q: ListCasesQuery): Promise<{ items: CaseSummary[]; nextCursor: string | null }> {
    const limit = checkLimit(q.limit);
    const { sql, args } = this.#searchSql(q, limit);
    const rows = this.#run("listCases", () => this.#stmt(sql).all(...args)) as SearchRow[];
    const p = page(rows, limit);
    return { items: p.rows.map(summaryFromSearchRow), nextCursor: p.nextCursor };
  }

  /** The query plan of a search, for the bench (EXPLAIN QUERY PLAN). */
  explainListCases(q: ListCasesQuery): string {
    const { sql, args } = this.#searchSql(q, q.limit);
    const rows = this.#database().prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>;
    return rows.map((r) => r.detail).join("\n");
  }

  /** One search's SQL and its arguments, for the search and for its query plan alike. */
  #searchSql(q: ListCasesQuery, limit: number): { sql: string; args: unknown[] } {
    const args: unknown[] = [];
    const bind = (v: unknown) => (args.push(v), "?");
    const where = caseSearchWhere(q, { param: bind, instant: bind, contains: (col, needle) => `instr(${col}, ${bind(needle)}) > 0` });
    args.push(limit + 1);
    return { sql: `SELECT ${SUMMARY_SELECT} FROM medmmv_cases WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ?`, args };
  }

  async adoptCases(owner: string, tenant: string, submittedBy: string): Promise<number> {
    return this.#write(() => this.#stmt("UPDATE medmmv_cases SET tenant = ?, submitted_by = ? WHERE owner = ? AND tenant = owner AND owner <> ?").run(tenant, submittedBy, owner, tenant).changes, "adoptCases");
  }

  async listCreatedBefore(before: string, limit: number): Promise<Array<{ id: string; tenant: string }>> {
    return this.#run("listCreatedBefore", () =>
      this.#stmt("SELECT id, tenant FROM medmmv_cases WHERE created_at < ? ORDER BY created_at ASC, id ASC LIMIT ?").all(before, limit),
    ) as Array<{ id: string; tenant: string }>;
  }

  /** The tenant's head row is the serialisation point: one IMMEDIATE transaction reads it, appends, moves it. */
  async appendAccess(e: NewAccessEvent): Promise<AccessEvent> {
    return this.#write(() => {
      const head = (this.#stmt("SELECT last_seq, last_hash FROM medmmv_access_heads WHERE tenant = ?").get(storableText(e.tenant)) as { last_seq: number; last_hash: string } | undefined) ?? { last_seq: 0, last_hash: "" };
      const event = chainedEvent(e, { lastSeq: Number(head.last_seq), lastHash: head.last_hash }, nowIso(), this.#signer);
      this.#stmt(`INSERT INTO medmmv_access_events (${ACCESS_COLUMNS}) VALUES (${ACCESS_COLUMNS.split(",").map(() => "?").join(", ")})`).run(...accessRowValues(event));
      this.#stmt("INSERT INTO medmmv_access_heads (tenant, last_seq, last_hash) VALUES (?, ?, ?) ON CONFLICT (tenant) DO UPDATE SET last_seq = excluded.last_seq, last_hash = excluded.last_hash").run(event.tenant, event.seq, event.hash);
      return event;
    }, "appendAccess");
  }

  async listAccess(q: AccessQuery): Promise<{ items: AccessEvent[]; nextCursor: string | null }> {
    const limit = checkAccessLimit(q.limit);
    const args: unknown[] = [];
    const where = accessWhere(q, (v) => (args.push(v), "?"));
    const rows = this.#run("listAccess", () =>
      this.#stmt(`SELECT ${ACCESS_COLUMNS} FROM medmmv_access_events ${where} ORDER BY tenant, seq LIMIT ?`).all(...args, limit + 1),
    ) as AccessRow[];
    const items = rows.slice(0, limit).map(accessFromRow);
    return { items, nextCursor: rows.length > limit ? encodeAccessCursor(items[items.length - 1]!) : null };
  }

  async accessHeads(): Promise<AccessHead[]> {
    const rows = this.#run("accessHeads", () => this.#stmt("SELECT tenant, last_seq, last_hash FROM medmmv_access_heads ORDER BY tenant").all()) as Array<{ tenant: string; last_seq: number; last_hash: string }>;
    return rows.map((r) => ({ tenant: r.tenant, lastSeq: Number(r.last_seq), lastHash: r.last_hash }));
  }

  async countCasesNotOwnedBy(owner: string): Promise<number> {
    const row = this.#run("countCasesNotOwnedBy", () => this.#stmt("SELECT COUNT(*) AS n FROM medmmv_cases WHERE owner <> ?").get(owner)) as { n: number };
    return Number(row.n);
  }

  async countCasesByStatus(): Promise<Record<CaseStatus, number>> {
    const rows = this.#run("countCasesByStatus", () => this.#stmt("SELECT status, COUNT(*) AS n FROM medmmv_cases GROUP BY status").all()) as Array<{ status: CaseStatus; n: number }>;
    return statusCounts(rows);
  }

  async listUnfinished(): Promise<CaseRecord[]> {
    const rows = this.#run("listUnfinished", () =>
      this.#stmt(
        `SELECT ${CASE_COLUMNS} FROM medmmv_cases WHERE status IN ('queued','running') ORDER BY created_at ASC, id ASC`,
      ).all(),
    ) as RawCaseRow[];
    return rows.map(caseFromRaw);
  }

  async listUnfinishedIds(): Promise<string[]> {
    const rows = this.#run("listUnfinishedIds", () =>
      this.#stmt("SELECT id FROM medmmv_cases WHERE status IN ('queued','running') ORDER BY created_at ASC, id ASC").all(),
    ) as Array<{ id: string }>;
    return rows.map((r) => r.id);
  }

  async countRunStart(id: string): Promise<number | null> {
    const row = this.#write(
      () =>
        this.#stmt("UPDATE medmmv_cases SET run_starts = run_starts + 1 WHERE id = ? AND status IN ('queued','running') RETURNING run_starts").get(id) as
          | { run_starts: number }
          | undefined,
      "countRunStart",
    );
    return row ? Number(row.run_starts) : null;
  }

  async uncountRunStart(id: string): Promise<void> {
    this.#write(() => this.#stmt("UPDATE medmmv_cases SET run_starts = run_starts - 1 WHERE id = ? AND run_starts > 0").run(id), "uncountRunStart");
  }

  async setFeedback(id: string, outcome: CardFeedbackOutcome): Promise<boolean> {
    return this.#write(() => this.#stmt("UPDATE medmmv_cases SET feedback = ? WHERE id = ?").run(outcome, id).changes === 1, "setFeedback");
  }

  async setStatus(id: string, status: CaseStatus, error?: { code: string; message: string } | null): Promise<boolean> {
    return this.#updateUnfinished("setStatus", id, "status = ?, error = ?", [status, toJson(error ?? null)]);
  }

  async setProgress(id: string, progress: CaseProgress): Promise<void> {
    this.#updateOne("setProgress", id, "progress = ?", [toJson(progress)]);
  }

  async saveResult(
    id: string,
    result: DiagnosisResult,
    fullEvidenceGraph: Record<string, unknown> | null,
    finalEvent?: { type: string; data: Record<string, unknown> },
  ): Promise<CaseEvent | null> {
    const at = nowIso();
    const seq = this.#write(() => {
      const saved = this.#stmt(
        `UPDATE medmmv_cases SET status = ?, result = ?, full_graph = ?, error = ?, updated_at = ?, ${SEARCH_SET}${finalEvent ? ", last_seq = last_seq + 1" : ""} WHERE id = ? AND status NOT IN (${TERMINAL_SQL}) RETURNING last_seq`,
      ).get(result.status, toJson(result), toJson(fullEvidenceGraph), toJson(result.error ?? null), at, ...searchColumnValues(searchColumns(result)), id) as { last_seq: number } | undefined;
      if (!saved) return undefined;
      if (finalEvent)
        this.#stmt("INSERT INTO medmmv_case_events (case_id, seq, type, data, at) VALUES (?, ?, ?, ?, ?)").run(id, saved.last_seq, finalEvent.type, toJson(finalEvent.data), at);
      return saved.last_seq;
    }, "saveResult");
    if (seq === undefined) {
      if (await this.getCase(id)) return null; // finished already: the first result stands
      throw notFound(id);
    }
    return finalEvent ? { caseId: id, seq, type: finalEvent.type, data: JSON.parse(JSON.stringify(finalEvent.data)) as Record<string, unknown>, at } : null;
  }

  async pruneCheckpoints(id: string): Promise<void> {
    this.#write(() => this.#deleteCheckpoints(id), "pruneCheckpoints");
  }

  #deleteCheckpoints(id: string): void {
    for (const table of SQLITE_CHECKPOINT_TABLES) this.#stmt(`DELETE FROM ${table} WHERE thread_id = ?`).run(id);
  }

  async deleteCase(id: string): Promise<boolean> {
    const removed = this.#deleteCaseRows(id);
    this.#truncateWal();
    return removed;
  }

  /**
   * The WAL still holds pages as they were before a delete (a case's text among them): copy the
   * zeroed pages into the file and cut the WAL to nothing. Without waiting: the event loop must
   * not stall on another process's read; busy (one reads an older snapshot), the WAL is cut by
   * the next delete's checkpoint, and meanwhile overwritten from its start by SQLite's own.
   */
  #truncateWal(): void {
    const db = this.#database();
    const wait = db.pragma("busy_timeout", { simple: true }) as number;
    try {
      db.pragma("busy_timeout = 0");
      db.pragma("wal_checkpoint(TRUNCATE)");
    } catch {
      // a checkpoint is housekeeping: the delete itself is done
    } finally {
      db.pragma(`busy_timeout = ${wait}`);
    }
  }

  #deleteCaseRows(id: string): boolean {
    return this.#write(() => {
      const shas = (this.#stmt("SELECT sha256 FROM medmmv_case_images WHERE case_id = ?").all(id) as Array<{
        sha256: string;
      }>).map((r) => r.sha256);
      // Checkpoints go even when the case row is already gone: they are useless without it.
      this.#deleteCheckpoints(id);
      // Model replies the case's calls cached quote its notes: they go with it.
      this.#stmt("DELETE FROM medmmv_response_cache WHERE case_id = ?").run(id);
      // Events and image links go with the case (ON DELETE CASCADE).
      const removed = this.#stmt("DELETE FROM medmmv_cases WHERE id = ?").run(id).changes > 0;
      const orphan = this.#stmt(
        `DELETE FROM medmmv_images WHERE sha256 = ?
         AND NOT EXISTS (SELECT 1 FROM medmmv_case_images WHERE sha256 = medmmv_images.sha256)`,
      );
      for (const sha of shas) orphan.run(sha);
      return removed;
    }, "deleteCase");
  }

  async appendEvent(caseId: string, type: string, data: Record<string, unknown>, progress?: CaseProgress): Promise<CaseEvent> {
    const at = nowIso();
    const row = this.#write(() => {
      // The per-case counter row is the serialisation point: seq has no gaps or repeats.
      const bumped = (
        progress
          ? this.#stmt("UPDATE medmmv_cases SET last_seq = last_seq + 1, progress = ?, updated_at = ? WHERE id = ? RETURNING last_seq").get(toJson(progress), at, caseId)
          : this.#stmt("UPDATE medmmv_cases SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq").get(caseId)
      ) as { last_seq: number } | undefined;
      if (!bumped) return undefined;
      this.#stmt("INSERT INTO medmmv_case_events (case_id, seq, type, data, at) VALUES (?, ?, ?, ?, ?)").run(
        caseId,
        bumped.last_seq,
        type,
        toJson(data),
        at,
      );
      return bumped.last_seq;
    }, "appendEvent");
    if (row === undefined) throw notFound(caseId);
    return { caseId, seq: row, type, data: JSON.parse(JSON.stringify(data)) as Record<string, unknown>, at };
  }

  async listEvents(caseId: string, afterSeq = 0): Promise<CaseEvent[]> {
    const rows = this.#run("listEvents", () =>
      this.#stmt("SELECT case_id, seq, type, data, at FROM medmmv_case_events WHERE case_id = ? AND seq > ? ORDER BY seq").all(
        caseId,
        afterSeq,
      ),
    ) as Array<{ case_id: string; seq: number; type: string; data: string; at: string }>;
    return rows.map((r) => eventFromRow({ ...r, data: parse(r.data) }));
  }

  async addTurn(caseId: string, turn: NewTurn): Promise<ConversationTurn> {
    const at = nowIso();
    try {
      this.#write(() => {
        if (!this.#stmt("SELECT 1 FROM medmmv_cases WHERE id = ?").get(caseId)) throw notFound(caseId);
        this.#stmt("INSERT INTO medmmv_case_turns (case_id, turn, data, at) VALUES (?, ?, ?, ?)").run(caseId, turn.turn, toJson(turnData(turn)), at);
      });
    } catch (e) {
      if (isMedmmvError(e)) throw e;
      if ((e as { code?: unknown }).code === "SQLITE_CONSTRAINT_PRIMARYKEY") throw duplicateTurn(caseId, turn.turn, e);
      throw storeFailed("addTurn", e);
    }
    return turnFromRow({ case_id: caseId, turn: turn.turn, data: JSON.parse(toJson(turnData(turn))!), at });
  }

  async listTurns(caseId: string): Promise<ConversationTurn[]> {
    const rows = this.#run("listTurns", () =>
      this.#stmt("SELECT case_id, turn, data, at FROM medmmv_case_turns WHERE case_id = ? ORDER BY turn").all(caseId),
    ) as Array<{ case_id: string; turn: number; data: string; at: string }>;
    return rows.map((r) => turnFromRow({ ...r, data: parse(r.data) }));
  }

  /** Prune, then insert-if-absent (an expired row is taken over), in one IMMEDIATE transaction. */
  async useTokenId(issuer: string, tokenId: string, expiresAtMs: number, nowMs: number): Promise<boolean> {
    return this.#write(() => {
      this.#stmt("DELETE FROM medmmv_used_token_ids WHERE expires_ms <= ?").run(nowMs);
      const inserted = this.#stmt(
        "INSERT INTO medmmv_used_token_ids (issuer, token_id, expires_ms) VALUES (?, ?, ?) ON CONFLICT (issuer, token_id) DO NOTHING",
      ).run(issuer, tokenId, expiresAtMs);
      return inserted.changes === 1;
    }, "useTokenId");
  }

  async getCachedResponse(key: string): Promise<CachedResponse | null> {
    const row = this.#run("getCachedResponse", () =>
      this.#stmt("SELECT value, created_at FROM medmmv_response_cache WHERE key = ?").get(key),
    ) as { value: string; created_at: string } | undefined;
    return row ? { value: JSON.parse(row.value) as Record<string, unknown>, createdAt: row.created_at } : null;
  }

  /** First write wins: a cached reply never changes under a key once stored. */
  async putCachedResponse(key: string, value: Record<string, unknown>, caseId: string | null = null): Promise<void> {
    this.#run("putCachedResponse", () =>
      this.#stmt(
        "INSERT INTO medmmv_response_cache (key, value, created_at, case_id) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
      ).run(key, toJson(value), nowIso(), caseId),
    );
  }

  /** `#updateOne` for a case that is not finished: false (nothing written) when it is terminal already. */
  #updateUnfinished(op: string, id: string, set: string, args: unknown[]): boolean {
    const changes = this.#run(op, () =>
      this.#stmt(`UPDATE medmmv_cases SET ${set}, updated_at = ? WHERE id = ? AND status NOT IN (${TERMINAL_SQL})`).run(...args, nowIso(), id),
    ).changes;
    if (changes > 0) return true;
    if (this.#run(op, () => this.#stmt("SELECT 1 FROM medmmv_cases WHERE id = ?").get(id))) return false;
    throw notFound(id);
  }

  #updateOne(op: string, id: string, set: string, args: unknown[]): void {
    const changes = this.#run(op, () =>
      this.#stmt(`UPDATE medmmv_cases SET ${set}, updated_at = ? WHERE id = ?`).run(...args, nowIso(), id),
    ).changes;
    if (changes === 0) throw notFound(id);
  }

  #database(): Database.Database {
    if (!this.#db) throw closedError();
    return this.#db;
  }

  #stmt(sql: string): Database.Statement {
    if (!this.#prepare) throw closedError();
    return this.#prepare(sql);
  }

  #run<T>(op: string, fn: () => T): T {
    try {
      this.#database();
      return fn();
    } catch (e) {
      throw storeFailed(op, e);
    }
  }

  /** One IMMEDIATE transaction; driver errors pass through untouched when op is absent. */
  #write<T>(fn: () => T, op?: string): T {
    const db = this.#database();
    if (!op) return db.transaction(fn).immediate();
    try {
      return db.transaction(fn).immediate();
    } catch (e) {
      throw storeFailed(op, e);
    }
  }
}
