/**
 * What a newcomer meets on a first start that goes wrong: each failure names the variable
 * or the step that fixes it, and none says "try again later". The model-side failures
 * (endpoint unreachable, 401, unknown model) are the model layer's (test/core/llm).
 */
import { createServer, type Server } from "node:net";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isMedmmvError, type MedmmvError } from "../../../src/core/contracts/errors.js";
import { startServer } from "../../../src/server/server.js";
import { openStore } from "../../../src/server/store/open-store.js";
import { redactDatabaseUrl } from "../../../src/core/database/database-errors.js";
import { PG_TEST_URL } from "../../support/pg-schemas.js";
import { closedPort } from "../../support/closed-port.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { LogCapture } from "./http-harness.js";

async function failure(p: Promise<unknown>): Promise<MedmmvError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isMedmmvError(err), String(err)).toBe(true);
  const e = err as MedmmvError;
  expect(e.message).not.toMatch(/try again later/i);
  return e;
}

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-first-run-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("PostgreSQL URL wrong", () => {
  it("nothing listening: names DATABASE_URL and says to start PostgreSQL or fix host and port", async () => {
    const url = `postgres://medmmv:s3cret-pw@127.0.0.1:${await closedPort()}/medmmv`;
    const e = await failure(openStore({ databaseUrl: url, dataDir: tmp }));
    expect(e.code).toBe("STORE_FAILED");
    expect(e.message).toMatch(/nothing accepts connections at PostgreSQL at postgres:\/\/medmmv:\*\*\*@127\.0\.0\.1:\d+\/medmmv \(DATABASE_URL\): start PostgreSQL there, or correct the host and port in DATABASE_URL/);
    expect(e.message).not.toContain("s3cret-pw");
  });

  it("a host name that does not resolve", async () => {
    const e = await failure(openStore({ databaseUrl: "postgres://postgres@medmmv-no-such-host.invalid:5432/test", dataDir: tmp }));
    expect(e.message).toMatch(/host name in DATABASE_URL does not resolve .*correct the host in DATABASE_URL/);
  });

  it("a database or a role the server does not have", async () => {
    const u = new URL(PG_TEST_URL);
    u.pathname = "/medmmv_no_such_database";
    const db = await failure(openStore({ databaseUrl: u.toString(), dataDir: tmp }));
    expect(db.message).toMatch(/database named in DATABASE_URL does not exist .*create it \(createdb NAME\) or correct the name in DATABASE_URL/);
    const r = new URL(PG_TEST_URL);
    r.username = "medmmv_no_such_role";
    const role = await failure(openStore({ databaseUrl: r.toString(), dataDir: tmp }));
    expect(role.message).toMatch(/refused the (role|password)/);
    expect(role.message).toMatch(/DATABASE_URL/);
  });

  it("not a PostgreSQL URL at all: refused before any connection, with an example", async () => {
    for (const url of ["localhost:5432/test", "mysql://root@127.0.0.1/db"]) {
      const e = await failure(openStore({ databaseUrl: url, dataDir: tmp }));
      expect(e.code).toBe("CONFIG_INVALID");
      expect(e.message).toMatch(/DATABASE_URL must be a PostgreSQL URL like postgres:\/\/user:password@host:5432\/database; unset it to use the embedded SQLite store under MEDMMV_DATA_DIR/);
    }
    expect(redactDatabaseUrl("postgres://u:pw@h:5432/d")).toBe("postgres://u:***@h:5432/d");
  });
});

describe("data directory not writable", () => {
  it("a path under a regular file: names MEDMMV_DATA_DIR and the way out", async () => {
    const file = path.join(tmp, "a-file");
    await writeFile(file, "x");
    const dir = path.join(file, "data");
    const e = await failure(openStore({ databaseUrl: null, dataDir: dir }));
    expect(e.code).toBe("STORE_FAILED");
    expect(e.message).toContain(`the data directory ${dir} (MEDMMV_DATA_DIR) cannot be written (ENOTDIR)`);
    expect(e.message).toMatch(/set MEDMMV_DATA_DIR to a directory this user can create and write/);
  });

  it.skipIf(process.getuid?.() === 0)("a directory without write permission (non-root only: root writes anywhere)", async () => {
    const ro = path.join(tmp, "read-only");
    await (await import("node:fs/promises")).mkdir(ro);
    await chmod(ro, 0o500);
    try {
      const e = await failure(openStore({ databaseUrl: null, dataDir: path.join(ro, "data") }));
      expect(e.message).toMatch(/\(MEDMMV_DATA_DIR\) cannot be written \((EACCES|EPERM)\)/);
    } finally {
      await chmod(ro, 0o700);
    }
  });
});

describe("port in use", () => {
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", r));
    port = (holder.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise<void>((r) => holder.close(() => r()));
  });

  it("startServer names PORT and the other process, and leaves nothing open", async () => {
    const dataDir = await mkdtemp(path.join(tmp, "port-"));
    const config = scriptedConfig("http://127.0.0.1:9/v1", { HOST: "127.0.0.1", PORT: String(port), MEDMMV_DATA_DIR: dataDir });
    const e = await failure(startServer(config, { logStream: new LogCapture(), handleSignals: false }));
    expect(e.code).toBe("CONFIG_INVALID");
    expect(e.message).toBe(`port ${port} on 127.0.0.1 is already in use (another medmmv serve, or another program): stop that process, or set PORT to a free port (PORT=0 picks one)`);
    // The store it had opened was closed again: the same directory opens at once.
    const store = await openStore({ databaseUrl: null, dataDir });
    await store.close();
  });
});
