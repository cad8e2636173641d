import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetentionSweeper } from "../../../src/server/service/retention.js";
import { createLogger } from "../../../src/server/http/logger.js";
import { chestPain, LogCapture } from "../http/http-harness.js";
import { startInjectServer, type InjectServer } from "../http/inject-harness.js";
import { usePgSchemas, PG_TEST_URL } from "../../support/pg-schemas.js";

/**
 * After DELETE and after a retention purge, no byte of the case's notes is left: not in a
 * table (the response cache's replies quote the notes), not in SQLite's free pages, not in
 * its WAL; on Postgres, in no table of the store's schema. The notes carry a marker no other
 * test uses, and the files are read as an intruder with the disk would read them.
 */
const marker = () => `Zelda-Quixoteworth-MRN-${randomBytes(6).toString("hex")}`;
const notesWith = (m: string) => `${chestPain().notes} Patient ${m}, born 1968-03-14, MRN ${m}.`;
const DAY = 24 * 3600 * 1000;

function sqliteFiles(dataDir: string): Buffer {
  const parts = ["medmmv.sqlite", "medmmv.sqlite-wal"].map((f) => join(dataDir, f)).filter(existsSync).map((f) => readFileSync(f));
  return Buffer.concat(parts);
}

async function runCase(t: InjectServer, m: string): Promise<string> {
  const r = await t.request({ method: "POST", url: "/diagnose", json: chestPain({ notes: notesWith(m) }) });
  expect(r.status, r.text).toBe(201);
  return (r.body as { caseId: string }).caseId;
}

describe("a deleted case leaves nothing: SQLite", () => {
  let t: InjectServer;
  beforeAll(async () => {
    t = await startInjectServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it("no byte of the notes in the file or its WAL after DELETE (the cached replies that quote them go too)", async () => {
    const m = marker();
    const id = await runCase(t, m);
    // The precondition that makes the test mean something: the notes are in the file, and in cached replies of the case.
    expect(sqliteFiles(t.dataDir).includes(m)).toBe(true);
    const Database = (await import("better-sqlite3")).default;
    const db = new Database(join(t.dataDir, "medmmv.sqlite"), { readonly: true });
    try {
      expect((db.prepare("SELECT COUNT(*) AS n FROM medmmv_response_cache WHERE case_id = ? AND instr(value, ?) > 0").get(id, m) as { n: number }).n).toBeGreaterThan(0);
    } finally {
      db.close();
    }
    expect((await t.request({ method: "DELETE", url: `/cases/${id}` })).status).toBe(204);
    expect(sqliteFiles(t.dataDir).includes(m)).toBe(false);
  });

  it("no byte of the notes in the file or its WAL after a retention purge", async () => {
    const m = marker();
    const id = await runCase(t, m);
    expect(sqliteFiles(t.dataDir).includes(m)).toBe(true);
    const sweeper = new RetentionSweeper({ store: t.store, service: t.service, days: 1, logger: createLogger("silent", new LogCapture()) });
    expect(await sweeper.sweep(Date.now() + 2 * DAY)).toBeGreaterThanOrEqual(1);
    expect(await t.store.getCase(id)).toBeNull();
    expect(sqliteFiles(t.dataDir).includes(m)).toBe(false);
  });

  it("creates the store's files readable by their owner alone", () => {
    for (const f of ["medmmv.sqlite", "medmmv.sqlite-wal", "medmmv.sqlite-shm"]) {
      const p = join(t.dataDir, f);
      if (existsSync(p)) expect((statSync(p).mode & 0o777).toString(8), f).toBe("600");
    }
    expect(existsSync(join(t.dataDir, "medmmv.sqlite"))).toBe(true);
  });
});

describe("a deleted case leaves nothing: Postgres", () => {
  const pg = usePgSchemas();
  let t: InjectServer;
  let schema: string;
  beforeAll(async () => {
    schema = pg.newSchema();
    t = await startInjectServer({ env: { DATABASE_URL: PG_TEST_URL }, storeOptions: { pgSchema: schema } });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Tables of the store's schema (ours and the checkpointer's) whose rows, as text, hold `m`. */
  const tablesHolding = async (m: string): Promise<string[]> => {
    const columns = (await pg.admin.query<{ table_name: string; column_name: string; data_type: string }>("SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = $1", [schema])).rows;
    const tables = [...new Set(columns.map((c) => c.table_name))];
    expect(tables).toEqual(expect.arrayContaining(["medmmv_cases", "medmmv_response_cache", "checkpoint_blobs", "checkpoint_writes"]));
    const holding: string[] = [];
    for (const table of tables) {
      // bytea columns (images, the checkpointer's msgpack blobs) by their bytes, the others as text
      const tests = columns.filter((c) => c.table_name === table).map((c) => (c.data_type === "bytea" ? `position(convert_to($1, 'UTF8') in "${c.column_name}") > 0` : `position($1 in "${c.column_name}"::text) > 0`));
      const { rows } = await pg.admin.query<{ n: string }>(`SELECT COUNT(*) AS n FROM "${schema}"."${table}" WHERE ${tests.join(" OR ")}`, [m]);
      if (Number(rows[0]!.n) > 0) holding.push(table);
    }
    return holding;
  };

  it("no table holds the notes after DELETE, nor after a retention purge", async () => {
    const m1 = marker();
    const id = await runCase(t, m1);
    expect(await tablesHolding(m1)).toEqual(expect.arrayContaining(["medmmv_cases", "medmmv_response_cache"]));
    expect((await t.request({ method: "DELETE", url: `/cases/${id}` })).status).toBe(204);
    expect(await tablesHolding(m1)).toEqual([]);

    const m2 = marker();
    await runCase(t, m2);
    expect(await tablesHolding(m2)).toContain("medmmv_response_cache");
    const sweeper = new RetentionSweeper({ store: t.store, service: t.service, days: 1, logger: createLogger("silent", new LogCapture()) });
    expect(await sweeper.sweep(Date.now() + 2 * DAY)).toBeGreaterThanOrEqual(1);
    expect(await tablesHolding(m2)).toEqual([]);
  });
});
