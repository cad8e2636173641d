/**
 * The offline literature corpus (src/core/search/local): documents, their overlapping chunks,
 * and an external-content FTS5 index over the chunks kept in step by triggers. Created by
 * the corpus index on first use, in the same file as the cases.
 */
export const SQLITE_CORPUS_DDL = `
CREATE TABLE IF NOT EXISTS medmmv_corpus_docs (
  corpus TEXT NOT NULL,
  id TEXT NOT NULL,
  title TEXT NOT NULL,
  url TEXT,
  source TEXT,
  content_hash TEXT NOT NULL,
  chunks INTEGER NOT NULL,
  indexed_at TEXT NOT NULL,
  PRIMARY KEY (corpus, id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS medmmv_corpus_chunks (
  id INTEGER PRIMARY KEY,
  corpus TEXT NOT NULL,
  doc_id TEXT NOT NULL,
  chunk INTEGER NOT NULL,
  title TEXT NOT NULL,
  text TEXT NOT NULL,
  UNIQUE (corpus, doc_id, chunk)
);

CREATE VIRTUAL TABLE IF NOT EXISTS medmmv_corpus_fts USING fts5(
  title, text, content='medmmv_corpus_chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS medmmv_corpus_chunks_ai AFTER INSERT ON medmmv_corpus_chunks BEGIN
  INSERT INTO medmmv_corpus_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
CREATE TRIGGER IF NOT EXISTS medmmv_corpus_chunks_ad AFTER DELETE ON medmmv_corpus_chunks BEGIN
  INSERT INTO medmmv_corpus_fts(medmmv_corpus_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
END;
`;
