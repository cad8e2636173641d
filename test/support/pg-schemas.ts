import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";

/** The Postgres the tests run against (CI provides one: an unreachable server fails the file, never skips it). */
export const PG_TEST_URL = process.env.MEDMMV_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export interface PgSchemas {
  /** A fresh schema name, dropped after the file (or earlier with dropSchema). */
  newSchema(): string;
  dropSchema(schema: string): Promise<void>;
  /** A connection for looking behind the code under test. */
  readonly admin: pg.Client;
}

/** Throwaway schemas for one test file, so runs never see each other's tables. */
export function usePgSchemas(): PgSchemas {
  let admin: pg.Client | undefined;
  const schemas = new Set<string>();
  const dropSchema = async (s: string) => {
    await admin!.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    schemas.delete(s);
  };
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: PG_TEST_URL, connectionTimeoutMillis: 5_000 });
    try {
      await admin.connect();
    } catch (e) {
      throw new Error(`Postgres is not reachable at ${PG_TEST_URL.replace(/:[^:@/]*@/, ":***@")} (set MEDMMV_TEST_DATABASE_URL): ${(e as Error).message}`);
    }
  });
  afterAll(async () => {
    // Schemas of tests that failed half-way.
    for (const s of [...schemas]) await dropSchema(s).catch(() => undefined);
    await admin?.end();
  });
  return {
    newSchema: () => {
      const s = `medmmv_test_${randomBytes(6).toString("hex")}`;
      schemas.add(s);
      return s;
    },
    dropSchema,
    get admin() {
      if (!admin) throw new Error("usePgSchemas().admin is only available inside tests");
      return admin;
    },
  };
}
