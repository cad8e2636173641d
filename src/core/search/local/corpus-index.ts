import type { PreparedDocument } from "./corpus-record.js";

/** One matching passage. `score` is larger for better matches (BM25 or ts_rank). */
export interface CorpusHit {
  corpus: string;
  docId: string;
  chunk: number;
  title: string;
  text: string;
  url: string | null;
  source: string | null;
  score: number;
}

export interface CorpusStats {
  corpus: string;
  documents: number;
  chunks: number;
  lastIndexedAt: string | null;
}

export interface UpsertOutcome {
  added: number;
  updated: number;
  unchanged: number;
}

/**
 * The offline literature index, on the same store as the cases (SQLite FTS5 or Postgres
 * full-text search). One conformance suite runs against every backend.
 */
export interface CorpusIndex {
  readonly backend: "sqlite" | "postgres";
  init(): Promise<void>;
  /** Insert or replace documents of one corpus; a document whose content hash is unchanged is left alone. */
  upsert(corpus: string, docs: PreparedDocument[]): Promise<UpsertOutcome>;
  /** Best passages for untrusted query text (escaped by the query builder); empty for a text with no terms. */
  search(text: string, opts: { limit: number; corpus?: string }): Promise<CorpusHit[]>;
  stats(): Promise<CorpusStats[]>;
  close(): Promise<void>;
}
