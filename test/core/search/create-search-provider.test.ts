import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/core/config.js";
import { createSearchProvider, openSearchProvider } from "../../../src/core/search/create-search-provider.js";
import { prepareDocument } from "../../../src/core/search/local/corpus-record.js";
import { openCorpusIndex } from "../../../src/core/search/local/open-corpus-index.js";
import { PG_TEST_URL, usePgSchemas } from "../../support/pg-schemas.js";

const pgSchemas = usePgSchemas();

describe("MEDMMV_SEARCH", () => {
  it("is read by the config loader: explicit choices, the defaults, and a clear error for anything else", () => {
    expect(loadConfig({}).search).toMatchObject({ provider: "none", auto: true });
    expect(loadConfig({ TAVILY_API_KEY: "k" }).search).toMatchObject({ provider: "tavily", auto: true });
    expect(loadConfig({ TAVILY_API_KEY: "k", MEDMMV_SEARCH: "local" }).search).toMatchObject({ provider: "local", auto: false });
    expect(loadConfig({ TAVILY_API_KEY: "k", MEDMMV_SEARCH: "none" }).search).toMatchObject({ provider: "none", auto: false });
    expect(() => loadConfig({ MEDMMV_SEARCH: "google" })).toThrow(expect.objectContaining({ code: "CONFIG_INVALID", message: expect.stringMatching(/MEDMMV_SEARCH/) }));
  });

  it("local on Postgres: the corpus is searched there; unset, it is chosen once a corpus is indexed there", async () => {
    const schema = pgSchemas.newSchema();
    const explicit = createSearchProvider(loadConfig({ DATABASE_URL: PG_TEST_URL, MEDMMV_SEARCH: "local" }), { pgSchema: schema });
    expect(explicit).toMatchObject({ name: "local", note: expect.stringMatching(/Postgres full-text search/) });

    const auto = loadConfig({ DATABASE_URL: PG_TEST_URL });
    expect((await openSearchProvider(auto, { pgSchema: schema })).name).toBe("none");
    // Asking created nothing: the corpus tables are made by the first `medmmv corpus index`.
    expect((await pgSchemas.admin.query("SELECT 1 FROM information_schema.tables WHERE table_schema = $1", [schema])).rows).toEqual([]);
    const index = await openCorpusIndex(auto.store, { pgSchema: schema });
    await index.upsert("cardio", [prepareDocument({ id: "t", title: "Troponin", text: "Troponin above the 99th percentile means myocardial injury." })]);
    await index.close();
    const chosen = await openSearchProvider(auto, { pgSchema: schema });
    try {
      expect(chosen.name).toBe("local");
      const found = await chosen.search("troponin percentile", { maxResults: 3 });
      expect(found.results).toEqual([expect.objectContaining({ title: "Troponin", url: "corpus://cardio/t" })]);
    } finally {
      await chosen.close?.();
      await explicit.close?.();
    }
  });

  it("a local search whose store cannot be reached fails as SEARCH_FAILED (the case goes on without it)", async () => {
    const p = createSearchProvider(loadConfig({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none", MEDMMV_SEARCH: "local" }));
    await expect(p.search("troponin", {})).rejects.toMatchObject({ code: "SEARCH_FAILED", message: expect.stringMatching(/local corpus search failed/) });
  });
});
