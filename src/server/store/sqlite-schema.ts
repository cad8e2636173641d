/**
 * SQLite tables for the case store. JSON is stored as TEXT; timestamps as ISO-8601 TEXT
 * (fixed width, so they sort as text). The LangGraph checkpointer keeps its own tables
 * (`checkpoints`, `writes`) in the same file; our tables carry a `medmmv_` prefix so the
 * two never collide.
 */
export const SQLITE_SCHEMA_VERSION = 5;

export const SQLITE_DDL = `
CREATE TABLE IF NOT EXISTS medmmv_cases (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued','running','completed','abstained','failed')),
  input TEXT NOT NULL,
  options TEXT NOT NULL,
  progress TEXT,
  result TEXT,
  full_graph TEXT,
  error TEXT,
  idempotency_key TEXT,
  request_hash TEXT,
  last_seq INTEGER NOT NULL DEFAULT 0,
  run_starts INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (owner, idempotency_key)
);
CREATE INDEX IF NOT EXISTS medmmv_cases_owner_created ON medmmv_cases (owner, created_at, id);
CREATE INDEX IF NOT EXISTS medmmv_cases_owner_status_created ON medmmv_cases (owner, status, created_at, id);
CREATE INDEX IF NOT EXISTS medmmv_cases_unfinished ON medmmv_cases (created_at, id)
  WHERE status IN ('queued','running');

CREATE TABLE IF NOT EXISTS medmmv_case_events (
  case_id TEXT NOT NULL REFERENCES medmmv_cases(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (case_id, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS medmmv_images (
  sha256 TEXT PRIMARY KEY,
  mime_type TEXT NOT NULL,
  bytes BLOB NOT NULL,
  width INTEGER,
  height INTEGER,
  created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS medmmv_case_images (
  case_id TEXT NOT NULL REFERENCES medmmv_cases(id) ON DELETE CASCADE,
  sha256 TEXT NOT NULL REFERENCES medmmv_images(sha256),
  PRIMARY KEY (case_id, sha256)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS medmmv_case_images_sha256 ON medmmv_case_images (sha256);

-- Added in version 3 (conversations); CREATE IF NOT EXISTS is also the upgrade of older files.
CREATE TABLE IF NOT EXISTS medmmv_case_turns (
  case_id TEXT NOT NULL REFERENCES medmmv_cases(id) ON DELETE CASCADE,
  turn INTEGER NOT NULL,
  data TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (case_id, turn)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS medmmv_response_cache (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- Single-use token ids (CDS Hooks JWT jti) seen by any process on this store, until they expire.
CREATE TABLE IF NOT EXISTS medmmv_used_token_ids (
  issuer TEXT NOT NULL,
  token_id TEXT NOT NULL,
  expires_ms INTEGER NOT NULL,
  PRIMARY KEY (issuer, token_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS medmmv_used_token_ids_expiry ON medmmv_used_token_ids (expires_ms);
`;

/** Columns added after version 1, for files created before them: [name, type]. */
export const SQLITE_ADDED_CASE_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  // How often the case's run was started (the crash quarantine); files from before it get 0.
  ["run_starts", "INTEGER NOT NULL DEFAULT 0"],
  // Version 5: teams, and the columns case search reads (written when the result is saved).
  ["tenant", "TEXT NOT NULL DEFAULT ''"],
  ["submitted_by", "TEXT NOT NULL DEFAULT ''"],
  ["pathway", "TEXT"],
  ["finished_at", "TEXT"],
  ["answer_option", "TEXT"],
  ["answer_text", "TEXT"],
  ["abstained", "INTEGER"],
  ["unsupported_claims", "INTEGER"],
  ["hallucinations", "INTEGER"],
  ["answer_support", "REAL"],
  ["models", "TEXT"],
  ["prompt_hashes", "TEXT"],
  // Issue 55: agents stopped by a content filter or refused, and the last CDS card feedback.
  ["stopped_agents", "INTEGER"],
  ["feedback", "TEXT"],
];

/**
 * Run after the columns exist (a file from before version 5 gets them first): a case from
 * before teams is its owner's tenant; the search indexes; the access trail, whose rows
 * triggers keep append-only (its heads table is the one place a chain's end is written).
 */
export const SQLITE_DDL_AFTER_COLUMNS = `
UPDATE medmmv_cases SET tenant = owner WHERE tenant = '';
CREATE INDEX IF NOT EXISTS medmmv_cases_tenant_created ON medmmv_cases (tenant, created_at, id);
CREATE INDEX IF NOT EXISTS medmmv_cases_tenant_owner_created ON medmmv_cases (tenant, owner, created_at, id);

CREATE TABLE IF NOT EXISTS medmmv_access_events (
  tenant TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at TEXT NOT NULL,
  actor_type TEXT NOT NULL,
  actor_id TEXT NOT NULL,
  actor_sub TEXT,
  action TEXT NOT NULL,
  case_id TEXT,
  outcome TEXT NOT NULL,
  client TEXT,
  request_id TEXT,
  detail TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  signature TEXT,
  PRIMARY KEY (tenant, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS medmmv_access_events_case ON medmmv_access_events (case_id, tenant, seq);
CREATE INDEX IF NOT EXISTS medmmv_access_events_at ON medmmv_access_events (tenant, at);
-- ?actor= and ?action= (an auditor's "what did this clinician open"): without these, a scan of the whole trail.
CREATE INDEX IF NOT EXISTS medmmv_access_events_actor ON medmmv_access_events (actor_id, tenant, seq);
CREATE INDEX IF NOT EXISTS medmmv_access_events_action ON medmmv_access_events (action, tenant, seq);
CREATE TABLE IF NOT EXISTS medmmv_access_heads (
  tenant TEXT PRIMARY KEY,
  last_seq INTEGER NOT NULL,
  last_hash TEXT NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS medmmv_access_events_no_update BEFORE UPDATE ON medmmv_access_events
BEGIN SELECT RAISE(ABORT, 'medmmv_access_events is append-only'); END;
CREATE TRIGGER IF NOT EXISTS medmmv_access_events_no_delete BEFORE DELETE ON medmmv_access_events
BEGIN SELECT RAISE(ABORT, 'medmmv_access_events is append-only'); END;
`;

/** Columns added to other tables after they were first released (a file from before gets them): table → [name, type]. */
export const SQLITE_ADDED_COLUMNS: Readonly<Record<string, ReadonlyArray<readonly [string, string]>>> = {
  // The signature of each event's chain position with MEDMMV_AUDIT_SIGNING_KEY (null: no key).
  medmmv_access_events: [["signature", "TEXT"]],
  // The case whose call wrote the reply, so deleting or purging the case removes it (null: an eval's or a CLI's).
  medmmv_response_cache: [["case_id", "TEXT"]],
};

/** Run once the added columns exist. */
export const SQLITE_DDL_AFTER_ADDED_COLUMNS = `
CREATE INDEX IF NOT EXISTS medmmv_response_cache_case ON medmmv_response_cache (case_id) WHERE case_id IS NOT NULL;
`;

/** Table names the installed SqliteSaver (@langchain/langgraph-checkpoint-sqlite 1.x) creates. */
export const SQLITE_CHECKPOINT_TABLES = ["checkpoints", "writes"] as const;
