import { describe, expect, it } from "vitest";
import { prepareDocument } from "../../../../src/core/search/local/corpus-record.js";
import { openCorpusIndex } from "../../../../src/core/search/local/open-corpus-index.js";
import { PostgresCorpusIndex } from "../../../../src/core/search/local/postgres-corpus-index.js";
import { describeCorpusConformance } from "./corpus-conformance.js";
import { PG_TEST_URL, usePgSchemas } from "../../../support/pg-schemas.js";

const pgs = usePgSchemas();
const { newSchema, dropSchema } = pgs;

describeCorpusConformance(
  "postgres",
  async () => {
    const schema = newSchema();
    return {
      open: () => openCorpusIndex({ databaseUrl: PG_TEST_URL, dataDir: "./unused" }, { pgSchema: schema }),
      cleanup: () => dropSchema(schema),
    };
  },
  { fuzzRuns: 150 },
);

describe("PostgresCorpusIndex specifics", () => {
  it("keeps a weighted tsvector per chunk behind a GIN index, in the requested schema", async () => {
    const schema = newSchema();
    const index = await openCorpusIndex({ databaseUrl: PG_TEST_URL, dataDir: "./unused" }, { pgSchema: schema });
    try {
      expect(index.backend).toBe("postgres");
      await index.upsert("cardio", [prepareDocument({ id: "a", title: "Troponin", text: "A cardiac marker." })]);
      const idx = await pgs.admin.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'medmmv_corpus_chunks_tsv'", [schema]);
      expect(idx.rows[0]?.indexdef).toMatch(/USING gin \(tsv\)/);
      const row = await pgs.admin.query<{ tsv: string }>(`SELECT tsv::text FROM "${schema}".medmmv_corpus_chunks`);
      expect(row.rows[0]!.tsv).toMatch(/'troponin':1A/);
    } finally {
      await index.close();
      await dropSchema(schema);
    }
  });

  it("tells whether a schema holds a corpus without creating its tables", async () => {
    const schema = newSchema();
    const tables = async () =>
      (await pgs.admin.query<{ n: number }>("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1", [schema])).rows[0]!.n;
    try {
      expect(await PostgresCorpusIndex.hasCorpus({ connectionString: PG_TEST_URL, schema })).toBe(false);
      expect(await tables()).toBe(0);
      const index = await openCorpusIndex({ databaseUrl: PG_TEST_URL, dataDir: "./unused" }, { pgSchema: schema });
      try {
        expect(await PostgresCorpusIndex.hasCorpus({ connectionString: PG_TEST_URL, schema })).toBe(false);
        await index.upsert("cardio", [prepareDocument({ id: "a", title: "Troponin", text: "A cardiac marker." })]);
        expect(await PostgresCorpusIndex.hasCorpus({ connectionString: PG_TEST_URL, schema })).toBe(true);
      } finally {
        await index.close();
      }
    } finally {
      await dropSchema(schema);
    }
  });

  it("initialises safely when several processes create the tables at once", async () => {
    const schema = newSchema();
    const indexes = Array.from({ length: 4 }, () => new PostgresCorpusIndex({ connectionString: PG_TEST_URL, schema }));
    try {
      const results = await Promise.allSettled(indexes.map((i) => i.init()));
      expect(results.map((r) => (r.status === "rejected" ? String(r.reason) : "ok"))).toEqual(["ok", "ok", "ok", "ok"]);
    } finally {
      for (const i of indexes) await i.close();
      await dropSchema(schema);
    }
  });

  it("fails init with STORE_FAILED when the server cannot be reached", async () => {
    const index = new PostgresCorpusIndex({ connectionString: "postgres://nobody@127.0.0.1:1/none", schema: "unused" });
    await expect(index.init()).rejects.toMatchObject({ code: "STORE_FAILED" });
    await index.close();
  });
});
