import { checkSchemaName } from "../../database/database-names.js";

/** The offline literature corpus (src/core/search/local) in the same schema as the cases. */
export function pgCorpusTables(schema: string): { docs: string; chunks: string } {
  const q = `"${checkSchemaName(schema)}"`;
  return { docs: `${q}.medmmv_corpus_docs`, chunks: `${q}.medmmv_corpus_chunks` };
}

/** Chunks carry a stored tsvector (title weighted above text) with a GIN index for ts_rank. */
export function pgCorpusDdl(schema: string): string {
  const t = pgCorpusTables(schema);
  return `
CREATE SCHEMA IF NOT EXISTS "${schema}";
CREATE TABLE IF NOT EXISTS ${t.docs} (
  corpus TEXT NOT NULL,
  id TEXT NOT NULL,
  title TEXT NOT NULL,
  url TEXT,
  source TEXT,
  content_hash TEXT NOT NULL,
  chunks INTEGER NOT NULL,
  indexed_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (corpus, id)
);
CREATE TABLE IF NOT EXISTS ${t.chunks} (
  corpus TEXT NOT NULL,
  doc_id TEXT NOT NULL,
  chunk INTEGER NOT NULL,
  title TEXT NOT NULL,
  text TEXT NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', text), 'B')) STORED,
  PRIMARY KEY (corpus, doc_id, chunk),
  FOREIGN KEY (corpus, doc_id) REFERENCES ${t.docs} (corpus, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS medmmv_corpus_chunks_tsv ON ${t.chunks} USING GIN (tsv);
`;
}
