/**
 * `medmmv corpus …` opens the corpus index, not the case store: a first run that goes wrong
 * there is told the same way as openStore's (test/server/http/first-run-errors.test.ts), naming
 * the variable to fix.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { hasIndexedCorpus, openCorpusIndex } from "../../../../src/core/search/local/open-corpus-index.js";
import { closedPort } from "../../../support/closed-port.js";
import { rejection } from "../../../support/rejection.js";
import { useTempDir } from "../../../support/temp-dir.js";

const tempDir = useTempDir("medmmv-corpus-open-");

describe("openCorpusIndex on a first run that goes wrong", () => {
  it("a DATABASE_URL that is not a PostgreSQL URL: CONFIG_INVALID before any connection, with an example", async () => {
    const e = await rejection(openCorpusIndex({ databaseUrl: "localhost:5432/test", dataDir: tempDir() }));
    expect(e.code).toBe("CONFIG_INVALID");
    expect(e.message).toMatch(/DATABASE_URL must be a PostgreSQL URL like postgres:\/\/user:password@host:5432\/database/);
  });

  it("nothing listening at DATABASE_URL: says to start PostgreSQL or fix host and port, without the password", async () => {
    const url = `postgres://medmmv:s3cret-pw@127.0.0.1:${await closedPort()}/medmmv`;
    const e = await rejection(openCorpusIndex({ databaseUrl: url, dataDir: tempDir() }));
    expect(e.code).toBe("STORE_FAILED");
    expect(e.message).toMatch(/nothing accepts connections at PostgreSQL at postgres:\/\/medmmv:\*\*\*@127\.0\.0\.1:\d+\/medmmv \(DATABASE_URL\): start PostgreSQL there/);
    expect(e.message).not.toContain("s3cret-pw");
  });

  it("asking whether a corpus is indexed (the boot-time default) is told the same way", async () => {
    const url = `postgres://medmmv:s3cret-pw@127.0.0.1:${await closedPort()}/medmmv`;
    const e = await rejection(hasIndexedCorpus({ databaseUrl: url, dataDir: tempDir() }));
    expect(e.message).toMatch(/nothing accepts connections at PostgreSQL at postgres:\/\/medmmv:\*\*\*@127\.0\.0\.1:\d+\/medmmv \(DATABASE_URL\)/);
    expect((await rejection(hasIndexedCorpus({ databaseUrl: "localhost:5432/test", dataDir: tempDir() }))).code).toBe("CONFIG_INVALID");
  });

  it("a data directory that cannot be created: names MEDMMV_DATA_DIR", async () => {
    const file = path.join(tempDir(), "a-file");
    await writeFile(file, "x");
    const dir = path.join(file, "data");
    const e = await rejection(openCorpusIndex({ databaseUrl: null, dataDir: dir }));
    expect(e.code).toBe("STORE_FAILED");
    expect(e.message).toContain(`the data directory ${dir} (MEDMMV_DATA_DIR) cannot be written (ENOTDIR)`);
  });
});
