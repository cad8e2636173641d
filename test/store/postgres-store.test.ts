import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaseStore } from "../../src/store/case-store.js";
import { openStore } from "../../src/store/open-store.js";
import { PostgresStore } from "../../src/store/postgres-store.js";
import { describeStoreConformance, expectCode, makeNewCase } from "./conformance.js";

/**
 * Runs against a real Postgres. CI provides one, so an unreachable server fails this
 * file instead of skipping it.
 */
const URL = process.env.MEDMMV_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

let admin: pg.Client;
const schemas = new Set<string>();
const newSchema = () => {
  const s = `medmmv_test_${randomBytes(6).toString("hex")}`;
  schemas.add(s);
  return s;
};
const dropSchema = async (s: string) => {
  await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  schemas.delete(s);
};

beforeAll(async () => {
  admin = new pg.Client({ connectionString: URL, connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
  } catch (e) {
    throw new Error(
      `Postgres is not reachable at ${URL.replace(/:[^:@/]*@/, ":***@")} (set MEDMMV_TEST_DATABASE_URL): ${(e as Error).message}`,
    );
  }
});

afterAll(async () => {
  // Schemas of tests that failed half-way.
  for (const s of [...schemas]) await dropSchema(s).catch(() => undefined);
  await admin?.end();
});

describeStoreConformance("postgres", async () => {
  const schema = newSchema();
  const opened: CaseStore[] = [];
  const open = async () => {
    const s = await openStore({ databaseUrl: URL, dataDir: "./unused" }, { pgSchema: schema });
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
      await admin.query(`UPDATE "${schema}".medmmv_cases SET created_at = $1 WHERE id = $2`, [createdAt, id]);
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
      const tables = await admin.query<{ table_name: string }>(
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
      const cols = await admin.query<{ column_name: string; data_type: string }>(
        `SELECT column_name, data_type FROM information_schema.columns
         WHERE table_schema = $1 AND table_name = 'medmmv_cases' AND column_name IN ('input', 'result', 'full_graph')`,
        [schema],
      );
      expect(cols.rows.map((r) => r.data_type)).toEqual(["jsonb", "jsonb", "jsonb"]);
      await store.createCase(makeNewCase("in-schema"));
      const n = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".medmmv_cases`);
      expect(n.rows[0].n).toBe(1);
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it("upgrades a table from the first schema version: the lease columns are added, the cases kept", async () => {
    const schema = newSchema();
    const first = await openStore({ databaseUrl: URL, dataDir: "./unused" }, { pgSchema: schema });
    await first.createCase(makeNewCase("old-case"));
    await first.close();
    await admin.query(`ALTER TABLE "${schema}".medmmv_cases DROP COLUMN runner, DROP COLUMN lease_expires_ms`);
    const upgraded = await openStore({ databaseUrl: URL, dataDir: "./unused" }, { pgSchema: schema });
    try {
      expect((await upgraded.getCase("old-case"))?.status).toBe("queued");
      expect(await upgraded.listUnfinishedLeases()).toEqual([{ id: "old-case", runner: null, expiresAtMs: null }]);
      expect(await upgraded.claimCase("old-case", { runner: "A", expiresAtMs: 2_000 }, 1_000)).toBe(true);
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
      const v = await admin.query(`SELECT v FROM "${schema}".checkpoint_migrations ORDER BY v`);
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
