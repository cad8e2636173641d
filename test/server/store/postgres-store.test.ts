import { describe, expect, it } from "vitest";
import type { CaseStore } from "../../../src/server/store/case-store.js";
import { openStore } from "../../../src/server/store/open-store.js";
import { PostgresStore } from "../../../src/server/store/postgres-store.js";
import { describeStoreConformance, expectCode, makeNewCase, makeResult } from "./conformance/index.js";
import { PG_TEST_URL as URL, usePgSchemas } from "../../support/pg-schemas.js";

/**
 * Runs against a real Postgres. CI provides one, so an unreachable server fails this
 * file instead of skipping it.
 */
const pgSchemas = usePgSchemas();
const { newSchema, dropSchema } = pgSchemas;

describeStoreConformance("postgres", async () => {
  const schema = newSchema();
  const opened: CaseStore[] = [];
  const open = async (opts: { auditSigningKey?: string } = {}) => {
    const s = await openStore({ databaseUrl: URL, dataDir: "./unused", auditSigningKey: opts.auditSigningKey ?? null }, { pgSchema: schema });
    opened.push(s);
    return s;
  };
  const store = await open();
  return {
    store,
    reopen: open,
    dispose: async () => {
      for (const s of opened) await s.close();
      await dropSchema(schema);
    },
    setCreatedAt: async (id, createdAt) => {
      await pgSchemas.admin.query(`UPDATE "${schema}".medmmv_cases SET created_at = $1 WHERE id = $2`, [createdAt, id]);
    },
    exec: async (sql) => {
      await pgSchemas.admin.query(`SET search_path TO "${schema}"`);
      try {
        await pgSchemas.admin.query(sql);
      } finally {
        await pgSchemas.admin.query("RESET search_path");
      }
    },
    explain: async (sql) => {
      await pgSchemas.admin.query(`SET search_path TO "${schema}"; SET enable_seqscan = off`);
      try {
        return (await pgSchemas.admin.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`)).rows.map((r) => r["QUERY PLAN"]).join("\n");
      } finally {
        await pgSchemas.admin.query("RESET search_path; RESET enable_seqscan");
      }
    },
  };
});

describe("PostgresStore specifics", () => {
  it("creates its tables in the requested schema, with JSONB columns, next to the checkpointer's", async () => {
    const schema = newSchema();
    const store = await openStore({ databaseUrl: URL, dataDir: "./unused" }, { pgSchema: schema });
    try {
      expect(store.backend).toBe("postgres");
      expect(store).toBeInstanceOf(PostgresStore);
      const tables = await pgSchemas.admin.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
        [schema],
      );
      expect(tables.rows.map((r) => r.table_name)).toEqual(
        expect.arrayContaining([
          "medmmv_cases",
          "medmmv_case_events",
          "medmmv_images",
          "medmmv_case_images",
          "medmmv_response_cache",
          "checkpoints",
          "checkpoint_blobs",
          "checkpoint_writes",
        ]),
      );
      const cols = await pgSchemas.admin.query<{ column_name: string; data_type: string }>(
        `SELECT column_name, data_type FROM information_schema.columns
         WHERE table_schema = $1 AND table_name = 'medmmv_cases' AND column_name IN ('input', 'result', 'full_graph')`,
        [schema],
      );
      expect(cols.rows.map((r) => r.data_type)).toEqual(["jsonb", "jsonb", "jsonb"]);
      await store.createCase(makeNewCase("in-schema"));
      const n = await pgSchemas.admin.query(`SELECT count(*)::int AS n FROM "${schema}".medmmv_cases`);
      expect(n.rows[0].n).toBe(1);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it("upgrades a table from an older schema version: the run-start count is added, the cases kept", async () => {
    const schema = newSchema();
    const first = await openStore({ databaseUrl: URL, dataDir: "./unused" }, { pgSchema: schema });
    await first.createCase(makeNewCase("old-case"));
    await first.close();
    await pgSchemas.admin.query(`ALTER TABLE "${schema}".medmmv_cases DROP COLUMN run_starts`);
    const upgraded = await openStore({ databaseUrl: URL, dataDir: "./unused" }, { pgSchema: schema });
    try {
      expect((await upgraded.getCase("old-case"))?.status).toBe("queued");
      expect(await upgraded.listUnfinishedIds()).toEqual(["old-case"]);
      expect(await upgraded.countRunStart("old-case")).toBe(1);
    } finally {
      await upgraded.close();
      await dropSchema(schema);
    }
  });

  it("upgrades a table from before teams: each case its owner's tenant, finished ones searchable from their results, the access trail added", async () => {
    const schema = newSchema();
    const first = await openStore({ databaseUrl: URL, dataDir: "./unused" }, { pgSchema: schema });
    await first.createCase(makeNewCase("done", { owner: "digest-a" }));
    await first.saveResult("done", makeResult("done"), null);
    await first.close();
    const cols = ["tenant", "submitted_by", "pathway", "finished_at", "answer_option", "answer_text", "abstained", "unsupported_claims", "hallucinations", "answer_support", "models", "prompt_hashes"];
    await pgSchemas.admin.query(`DROP TABLE "${schema}".medmmv_access_events, "${schema}".medmmv_access_heads; ALTER TABLE "${schema}".medmmv_cases ${cols.map((c) => `DROP COLUMN ${c}`).join(", ")}`);
    const upgraded = await openStore({ databaseUrl: URL, dataDir: "./unused" }, { pgSchema: schema });
    try {
      expect(await upgraded.getCase("done")).toMatchObject({ tenant: "digest-a" });
      expect((await upgraded.listCases({ tenant: "digest-a", abstained: false, limit: 10 })).items.map((i) => [i.id, i.answer?.option])).toEqual([["done", "B"]]);
      expect((await upgraded.appendAccess({ tenant: "digest-a", actor: { type: "key", id: "k" }, action: "read", caseId: "done", outcome: "success", client: null, requestId: null, detail: {} })).seq).toBe(1);
    } finally {
      await upgraded.close();
      await dropSchema(schema);
    }
  });

  it("initialises safely when several processes start at once on a fresh schema", async () => {
    const schema = newSchema();
    const stores = Array.from({ length: 4 }, () => new PostgresStore({ connectionString: URL, schema, poolMax: 3 }));
    try {
      const results = await Promise.allSettled(stores.map((s) => s.init()));
      expect(results.map((r) => (r.status === "rejected" ? String(r.reason) : "ok"))).toEqual(["ok", "ok", "ok", "ok"]);
      await stores[0]!.createCase(makeNewCase("after-init"));
      expect((await stores[3]!.getCase("after-init"))?.id).toBe("after-init");
      // The checkpointer's migrations ran exactly once each.
      const v = await pgSchemas.admin.query(`SELECT v FROM "${schema}".checkpoint_migrations ORDER BY v`);
      expect(v.rows.map((r) => r.v)).toEqual([0, 1, 2, 3, 4]);
    } finally {
      for (const s of stores) await s.close();
      await dropSchema(schema);
    }
  });

  it("rejects schema names that would need quoting", () => {
    expect(() => new PostgresStore({ connectionString: URL, schema: 'x"; drop table y; --' })).toThrow(
      expect.objectContaining({ code: "CONFIG_INVALID" }),
    );
  });

  it("fails init with STORE_FAILED when the server cannot be reached", async () => {
    const store = new PostgresStore({ connectionString: "postgres://nobody@127.0.0.1:1/none", schema: "unused" });
    try {
      await expectCode(store.init(), "STORE_FAILED");
    } finally {
      await store.close();
    }
  });
});
