/**
 * `medmmv corpus …` opens the corpus index, not the case store: a first run that goes wrong
 * there is told the same way as openStore's (test/http/first-run-errors.test.ts), naming
 * the variable to fix.
 */
import { createServer } from "node:net";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isMedmmvError, type MedmmvError } from "../../../src/errors.js";
import { hasIndexedCorpus, openCorpusIndex } from "../../../src/search/local/open-corpus-index.js";

async function failure(p: Promise<unknown>): Promise<MedmmvError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isMedmmvError(err), String(err)).toBe(true);
  return err as MedmmvError;
}

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-corpus-open-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** A port that refuses connections: bound once, then released. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("openCorpusIndex on a first run that goes wrong", () => {
  it("a DATABASE_URL that is not a PostgreSQL URL: CONFIG_INVALID before any connection, with an example", async () => {
    const e = await failure(openCorpusIndex({ databaseUrl: "localhost:5432/test", dataDir: tmp }));
    expect(e.code).toBe("CONFIG_INVALID");
    expect(e.message).toMatch(/DATABASE_URL must be a PostgreSQL URL like postgres:\/\/user:password@host:5432\/database/);
  });

  it("nothing listening at DATABASE_URL: says to start PostgreSQL or fix host and port, without the password", async () => {
    const url = `postgres://medmmv:s3cret-pw@127.0.0.1:${await closedPort()}/medmmv`;
    const e = await failure(openCorpusIndex({ databaseUrl: url, dataDir: tmp }));
    expect(e.code).toBe("STORE_FAILED");
    expect(e.message).toMatch(/nothing accepts connections at PostgreSQL at postgres:\/\/medmmv:\*\*\*@127\.0\.0\.1:\d+\/medmmv \(DATABASE_URL\): start PostgreSQL there/);
    expect(e.message).not.toContain("s3cret-pw");
  });

  it("asking whether a corpus is indexed (the boot-time default) is told the same way", async () => {
    const url = `postgres://medmmv:s3cret-pw@127.0.0.1:${await closedPort()}/medmmv`;
    const e = await failure(hasIndexedCorpus({ databaseUrl: url, dataDir: tmp }));
    expect(e.message).toMatch(/nothing accepts connections at PostgreSQL at postgres:\/\/medmmv:\*\*\*@127\.0\.0\.1:\d+\/medmmv \(DATABASE_URL\)/);
    expect((await failure(hasIndexedCorpus({ databaseUrl: "localhost:5432/test", dataDir: tmp }))).code).toBe("CONFIG_INVALID");
  });

  it("a data directory that cannot be created: names MEDMMV_DATA_DIR", async () => {
    const file = path.join(tmp, "a-file");
    await writeFile(file, "x");
    const dir = path.join(file, "data");
    const e = await failure(openCorpusIndex({ databaseUrl: null, dataDir: dir }));
    expect(e.code).toBe("STORE_FAILED");
    expect(e.message).toContain(`the data directory ${dir} (MEDMMV_DATA_DIR) cannot be written (ENOTDIR)`);
  });
});
