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
  accessEvents: string;
  accessHeads: string;
  /** The function behind the access trail's append-only triggers. */
  appendOnlyFn: string;
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
    accessEvents: `${q}.medmmv_access_events`,
    accessHeads: `${q}.medmmv_access_heads`,
    appendOnlyFn: `${q}.medmmv_access_append_only`,
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
-- Teams, and the columns case search reads (written when the result is saved).
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS submitted_by TEXT NOT NULL DEFAULT '';
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS pathway TEXT;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS finished_at TEXT;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS answer_option TEXT;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS answer_text TEXT;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS abstained SMALLINT;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS unsupported_claims INTEGER;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS hallucinations INTEGER;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS answer_support DOUBLE PRECISION;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS models TEXT;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS prompt_hashes TEXT;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS stopped_agents INTEGER;
ALTER TABLE ${t.cases} ADD COLUMN IF NOT EXISTS feedback TEXT;
-- A case from before teams is its owner's tenant.
UPDATE ${t.cases} SET tenant = owner WHERE tenant = '';
CREATE INDEX IF NOT EXISTS medmmv_cases_tenant_created ON ${t.cases} (tenant, created_at, id);
CREATE INDEX IF NOT EXISTS medmmv_cases_tenant_owner_created ON ${t.cases} (tenant, owner, created_at, id);
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
-- The case whose call wrote the reply, so deleting or purging the case removes it (null: an eval's or a CLI's).
ALTER TABLE ${t.cache} ADD COLUMN IF NOT EXISTS case_id TEXT;
CREATE INDEX IF NOT EXISTS medmmv_response_cache_case ON ${t.cache} (case_id) WHERE case_id IS NOT NULL;

-- Single-use token ids (CDS Hooks JWT jti) seen by any process on this store, until they expire.
CREATE TABLE IF NOT EXISTS ${t.usedTokenIds} (
  issuer TEXT NOT NULL,
  token_id TEXT NOT NULL,
  expires_ms BIGINT NOT NULL,
  PRIMARY KEY (issuer, token_id)
);
CREATE INDEX IF NOT EXISTS medmmv_used_token_ids_expiry ON ${t.usedTokenIds} (expires_ms);

-- The access trail: hash-chained per tenant, append-only (triggers refuse UPDATE, DELETE and
-- TRUNCATE); at and detail are TEXT so a row reads back as the bytes it was hashed from.
CREATE TABLE IF NOT EXISTS ${t.accessEvents} (
  tenant TEXT NOT NULL,
  seq BIGINT NOT NULL,
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
  PRIMARY KEY (tenant, seq)
);
-- The signature of each event's chain position with MEDMMV_AUDIT_SIGNING_KEY (null: no key); added after the trail's first release.
ALTER TABLE ${t.accessEvents} ADD COLUMN IF NOT EXISTS signature TEXT;
CREATE INDEX IF NOT EXISTS medmmv_access_events_case ON ${t.accessEvents} (case_id, tenant, seq);
CREATE INDEX IF NOT EXISTS medmmv_access_events_at ON ${t.accessEvents} (tenant, at);
-- ?actor= and ?action= (an auditor's "what did this clinician open"): without these, a scan of the whole trail.
CREATE INDEX IF NOT EXISTS medmmv_access_events_actor ON ${t.accessEvents} (actor_id, tenant, seq);
CREATE INDEX IF NOT EXISTS medmmv_access_events_action ON ${t.accessEvents} (action, tenant, seq);
CREATE TABLE IF NOT EXISTS ${t.accessHeads} (
  tenant TEXT PRIMARY KEY,
  last_seq BIGINT NOT NULL,
  last_hash TEXT NOT NULL
);
CREATE OR REPLACE FUNCTION ${t.appendOnlyFn}() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN RAISE EXCEPTION 'medmmv_access_events is append-only'; END
$fn$;
CREATE OR REPLACE TRIGGER medmmv_access_events_no_change BEFORE UPDATE OR DELETE ON ${t.accessEvents}
  FOR EACH ROW EXECUTE FUNCTION ${t.appendOnlyFn}();
CREATE OR REPLACE TRIGGER medmmv_access_events_no_truncate BEFORE TRUNCATE ON ${t.accessEvents}
  FOR EACH STATEMENT EXECUTE FUNCTION ${t.appendOnlyFn}();
`;
}
