import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import type { CaseStore } from "../../../src/server/store/case-store.js";
import { openStore } from "../../../src/server/store/open-store.js";
import { SqliteStore } from "../../../src/server/store/sqlite-store.js";
import { SQLITE_FILE_NAME } from "../../../src/core/database/database-names.js";
import { describeStoreConformance, makeNewCase, makeResult } from "./conformance/index.js";

const roots: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "medmmv-store-"));
  roots.push(dir);
  return dir;
}
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

describeStoreConformance("sqlite", async () => {
  // A nested, not-yet-existing directory: the store must create it.
  const dataDir = join(tempDir(), "nested", "data");
  const opened: CaseStore[] = [];
  const open = async (opts: { auditSigningKey?: string } = {}) => {
    const s = await openStore({ databaseUrl: null, dataDir, auditSigningKey: opts.auditSigningKey ?? null });
    opened.push(s);
    return s;
  };
  const store = await open();
  return {
    store,
    reopen: open,
    dispose: async () => {
      for (const s of opened) await s.close();
    },
    setCreatedAt: async (id, createdAt) => {
      const db = new Database(join(dataDir, SQLITE_FILE_NAME));
      try {
        db.prepare("UPDATE medmmv_cases SET created_at = ? WHERE id = ?").run(createdAt, id);
      } finally {
        db.close();
      }
    },
    exec: async (sql) => {
      const db = new Database(join(dataDir, SQLITE_FILE_NAME));
      try {
        db.exec(sql);
      } finally {
        db.close();
      }
    },
    explain: async (sql) => {
      const db = new Database(join(dataDir, SQLITE_FILE_NAME), { readonly: true });
      try {
        return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join("\n");
      } finally {
        db.close();
      }
    },
  };
});

describe("SqliteStore specifics", () => {
  it("upgrades a file from an older schema version: the run-start count is added, the cases kept", async () => {
    const dataDir = join(tempDir(), "v1");
    const first = await openStore({ databaseUrl: null, dataDir });
    await first.createCase(makeNewCase("old-case"));
    await first.close();
    // Back to version 1: the table without the columns added since.
    const db = new Database(join(dataDir, SQLITE_FILE_NAME));
    db.exec("ALTER TABLE medmmv_cases DROP COLUMN run_starts");
    db.pragma("user_version = 1");
    db.close();

    const upgraded = await openStore({ databaseUrl: null, dataDir });
    try {
      expect((await upgraded.getCase("old-case"))?.status).toBe("queued");
      expect(await upgraded.listUnfinishedIds()).toEqual(["old-case"]);
      expect(await upgraded.countRunStart("old-case")).toBe(1);
      const peek = new Database(join(dataDir, SQLITE_FILE_NAME), { readonly: true });
      expect(peek.pragma("user_version", { simple: true })).toBe(5);
      peek.close();
    } finally {
      await upgraded.close();
    }
  });

  it("upgrades a version-2 file: the conversation turns table is added, the cases kept", async () => {
    const dataDir = join(tempDir(), "v2");
    const first = await openStore({ databaseUrl: null, dataDir });
    await first.createCase(makeNewCase("v2-case"));
    await first.close();
    const db = new Database(join(dataDir, SQLITE_FILE_NAME));
    db.exec("DROP TABLE medmmv_case_turns");
    db.pragma("user_version = 2");
    db.close();

    const upgraded = await openStore({ databaseUrl: null, dataDir });
    try {
      const t = await upgraded.addTurn("v2-case", { turn: 1, question: "q", answer: "a", step: null, category: null, contextConflict: false, evidence: [], details: {} });
      expect((await upgraded.listTurns("v2-case")).map((x) => x.turn)).toEqual([t.turn]);
      const peek = new Database(join(dataDir, SQLITE_FILE_NAME), { readonly: true });
      expect(peek.pragma("user_version", { simple: true })).toBe(5);
      peek.close();
    } finally {
      await upgraded.close();
    }
  });

  it("upgrades a version-4 file: each case its owner's tenant, finished ones searchable from their results, the access trail added", async () => {
    const dataDir = join(tempDir(), "v4");
    const first = await openStore({ databaseUrl: null, dataDir });
    await first.createCase(makeNewCase("v4-done", { owner: "digest-a" }));
    await first.saveResult("v4-done", makeResult("v4-done"), null);
    await first.createCase(makeNewCase("v4-queued", { owner: "digest-a" }));
    await first.close();
    const db = new Database(join(dataDir, SQLITE_FILE_NAME));
    db.exec("DROP INDEX medmmv_cases_tenant_created; DROP INDEX medmmv_cases_tenant_owner_created; DROP TABLE medmmv_access_events; DROP TABLE medmmv_access_heads;");
    for (const col of ["tenant", "submitted_by", "pathway", "finished_at", "answer_option", "answer_text", "abstained", "unsupported_claims", "hallucinations", "answer_support", "models", "prompt_hashes"]) db.exec(`ALTER TABLE medmmv_cases DROP COLUMN ${col}`);
    db.pragma("user_version = 4");
    db.close();

    const upgraded = await openStore({ databaseUrl: null, dataDir });
    try {
      expect(await upgraded.getCase("v4-done")).toMatchObject({ tenant: "digest-a", owner: "digest-a" });
      const found = await upgraded.listCases({ tenant: "digest-a", abstained: false, limit: 10 });
      expect(found.items.map((i) => [i.id, i.answer?.option])).toEqual([["v4-done", "B"]]);
      expect((await upgraded.listCases({ tenant: "digest-a", owner: "digest-a", limit: 10 })).items).toHaveLength(2);
      expect((await upgraded.appendAccess({ tenant: "digest-a", actor: { type: "key", id: "k" }, action: "read", caseId: "v4-done", outcome: "success", client: null, requestId: null, detail: {} })).seq).toBe(1);
    } finally {
      await upgraded.close();
    }
  });

  it("opens <dataDir>/medmmv.sqlite in WAL mode, sharing the file with the checkpointer", async () => {
    const dataDir = join(tempDir(), "d");
    const store = await openStore({ databaseUrl: null, dataDir });
    expect(store.backend).toBe("sqlite");
    expect(store).toBeInstanceOf(SqliteStore);
    const file = join(dataDir, SQLITE_FILE_NAME);
    expect(existsSync(file)).toBe(true);
    await store.createCase(makeNewCase("c1"));

    const peek = new Database(file, { readonly: true });
    try {
      expect(peek.pragma("journal_mode", { simple: true })).toBe("wal");
      const tables = (peek.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>)
        .map((r) => r.name)
        .sort();
      expect(tables).toEqual(
        expect.arrayContaining(["checkpoints", "writes", "medmmv_cases", "medmmv_case_events", "medmmv_images", "medmmv_case_images", "medmmv_response_cache"]),
      );
      // JSON is stored as TEXT.
      const raw = peek.prepare("SELECT typeof(input) AS t, input FROM medmmv_cases WHERE id = 'c1'").get() as { t: string; input: string };
      expect(raw.t).toBe("text");
      expect(JSON.parse(raw.input)).toEqual(makeNewCase("c1").input);
    } finally {
      peek.close();
      await store.close();
    }
  });

  it("lets two processes initialise one fresh file and write events concurrently without lock errors", async () => {
    const dataDir = join(tempDir(), "shared");
    const storeUrl = pathToFileURL(resolve("src/server/store/sqlite-store.ts")).href;
    const perChild = 150;
    // Each child: open the (possibly not yet existing) file, create its own case, race the
    // other child to create the shared one, wait for the other child, then append events.
    const script = `
      import { existsSync, writeFileSync } from "node:fs";
      import { join } from "node:path";
      const { SqliteStore } = await import(${JSON.stringify(storeUrl)});
      const [dataDir, me, other, n] = process.argv.slice(1);
      const store = new SqliteStore({ dataDir });
      await store.init();
      const mk = (id) => ({ id, owner: "proc", input: { id, question: "q?", images: [] }, options: {} });
      await store.createCase(mk("own-" + me));
      try { await store.createCase(mk("shared")); } catch (e) { if (e.code !== "CONFLICT") throw e; }
      writeFileSync(join(dataDir, "ready-" + me), "");
      const t0 = Date.now();
      while (!existsSync(join(dataDir, "ready-" + other))) {
        if (Date.now() - t0 > 20000) throw new Error("other process never got ready");
        await new Promise((r) => setTimeout(r, 5));
      }
      for (let i = 0; i < Number(n); i++) {
        await store.appendEvent("shared", "tick", { from: me, i });
        await store.appendEvent("own-" + me, "tick", { i });
      }
      await store.close();
    `;
    const run = (me: string, other: string) =>
      new Promise<{ code: number | null; stderr: string }>((done) => {
        const child = spawn(
          process.execPath,
          ["--import", "tsx", "--input-type=module", "-e", script, dataDir, me, other, String(perChild)],
          { stdio: ["ignore", "ignore", "pipe"] },
        );
        let stderr = "";
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        child.on("close", (code) => done({ code, stderr }));
      });
    const results = await Promise.all([run("a", "b"), run("b", "a")]);
    for (const r of results) {
      expect(r.stderr).not.toMatch(/locked|SQLITE_BUSY/i);
      expect(r.code, r.stderr).toBe(0);
    }

    const store = await openStore({ databaseUrl: null, dataDir });
    try {
      const shared = await store.listEvents("shared");
      expect(shared.map((e) => e.seq)).toEqual(Array.from({ length: 2 * perChild }, (_, i) => i + 1));
      for (const me of ["a", "b"]) {
        const mine = shared.filter((e) => e.data.from === me).map((e) => e.data.i);
        // Each process's appends are all there, in the order it made them.
        expect(mine).toEqual(Array.from({ length: perChild }, (_, i) => i));
        expect((await store.listEvents(`own-${me}`)).length).toBe(perChild);
      }
    } finally {
      await store.close();
    }
  }, 60_000);

  it("reports STORE_FAILED (not a raw driver error) when the data directory cannot be created", async () => {
    const blocker = join(tempDir(), "a-file");
    await import("node:fs/promises").then((fs) => fs.writeFile(blocker, "x"));
    const err = await openStore({ databaseUrl: null, dataDir: join(blocker, "sub") }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "MedmmvError", code: "STORE_FAILED" });
  });
});
