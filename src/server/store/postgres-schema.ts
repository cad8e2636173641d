import { checkSchemaName } from "../../core/database/database-names.js";

/**
 * Postgres tables for the case store, all inside one schema (default "public") next to
 * the PostgresSaver's checkpoint tables. JSON is JSONB; timestamps are timestamptz.
 */

export interface PgTables {
  cases: string;
  events: string;
  images: string;
  caseImages: string;
  cache: string;
  turns: string;
  usedTokenIds: string;
  /** The installed PostgresSaver's (@langchain/langgraph-checkpoint-postgres 1.x) tables keyed by thread_id. */
  checkpointTables: string[];
}

export function pgTables(schema: string): PgTables {
  const q = `"${checkSchemaName(schema)}"`;
  return {
    cases: `${q}.medmmv_cases`,
    events: `${q}.medmmv_case_events`,
    images: `${q}.medmmv_images`,
    caseImages: `${q}.medmmv_case_images`,
    cache: `${q}.medmmv_response_cache`,
    turns: `${q}.medmmv_case_turns`,
    usedTokenIds: `${q}.medmmv_used_token_ids`,
    checkpointTables: ["checkpoint_writes", "checkpoint_blobs", "checkpoints"].map((t) => `${q}.${t}`),
  };
}

/** Constraint names we map to CONFLICT; kept stable so the error mapping can rely on them. */
export const PG_CONSTRAINTS = {
  casesPkey: "medmmv_cases_pkey",
  ownerIdempotency: "medmmv_cases_owner_idempotency_key",
} as const;

export function pgDdl(schema: string): string {
  const t = pgTables(schema);
  return `
CREATE SCHEMA IF NOT EXISTS "${schema}";
CREATE TABLE IF NOT EXISTS ${t.cases} (
  id TEXT NOT NULL,
  owner TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued','running','completed','abstained','failed')),
  input JSONB NOT NULL,
  options JSONB NOT NULL,
  progress JSONB,
  result JSONB,
  full_graph JSONB,
  error JSONB,
  idempotency_key TEXT,
  request_hash TEXT,
  last_seq INTEGER NOT NULL DEFAULT 0,
  run_starts INTEGER NOT NULL DEFAULT 0,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  CONSTRAINT ${PG_CONSTRAINTS.casesPkey} PRIMARY KEY (id),
  CONSTRAINT ${PG_CONSTRAINTS.ownerIdempotency} UNIQUE (owner, idempotency_key)
);
-- Added after the first version: a table created before them gets them here.
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS run_starts INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS medmmv_cases_owner_created ON ${t.cases} (owner, created_at, id);
CREATE INDEX IF NOT EXISTS medmmv_cases_owner_status_created ON ${t.cases} (owner, status, created_at, id);
CREATE INDEX IF NOT EXISTS medmmv_cases_unfinished ON ${t.cases} (created_at, id)
  WHERE status IN ('queued','running');

CREATE TABLE IF NOT EXISTS ${t.events} (
  case_id TEXT NOT NULL REFERENCES ${t.cases}(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  data JSONB NOT NULL,
  at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (case_id, seq)
);

CREATE TABLE IF NOT EXISTS ${t.images} (
  sha256 TEXT PRIMARY KEY,
  mime_type TEXT NOT NULL,
  bytes BYTEA NOT NULL,
  width INTEGER,
  height INTEGER,
  created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS ${t.caseImages} (
  case_id TEXT NOT NULL REFERENCES ${t.cases}(id) ON DELETE CASCADE,
  sha256 TEXT NOT NULL REFERENCES ${t.images}(sha256),
  PRIMARY KEY (case_id, sha256)
);
CREATE INDEX IF NOT EXISTS medmmv_case_images_sha256 ON ${t.caseImages} (sha256);

-- Added with conversations; CREATE IF NOT EXISTS is also the upgrade of older schemas.
CREATE TABLE IF NOT EXISTS ${t.turns} (
  case_id TEXT NOT NULL REFERENCES ${t.cases}(id) ON DELETE CASCADE,
  turn INTEGER NOT NULL,
  data JSONB NOT NULL,
  at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (case_id, turn)
);

CREATE TABLE IF NOT EXISTS ${t.cache} (
  key TEXT PRIMARY KEY,
  value JSONB NOT NULL,
  created_at TIMESTAMPTZ NOT NULL
);

-- Single-use token ids (CDS Hooks JWT jti) seen by any process on this store, until they expire.
CREATE TABLE IF NOT EXISTS ${t.usedTokenIds} (
  issuer TEXT NOT NULL,
  token_id TEXT NOT NULL,
  expires_ms BIGINT NOT NULL,
  PRIMARY KEY (issuer, token_id)
);
CREATE INDEX IF NOT EXISTS medmmv_used_token_ids_expiry ON ${t.usedTokenIds} (expires_ms);
`;
}
