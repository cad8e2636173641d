import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/server/store/open-store.js";
import { medmmvCli } from "../support/medmmv-cli.js";

/**
 * `medmmv audit anchor` and `medmmv audit verify --anchor` as an operator runs them, with the
 * key in MEDMMV_AUDIT_SIGNING_KEY_FILE (a mounted secret), against a store an intruder then
 * rewrites without the key.
 */
const KEY = "operator-audit-secret-0123456789abcdefghij";
let dir: string;
let keyFile: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "medmmv-audit-signing-"));
  keyFile = join(dir, "audit.key");
  await writeFile(keyFile, `${KEY}\n`, { mode: 0o600 });
  const store = await openStore({ databaseUrl: null, dataDir: dir, auditSigningKey: KEY });
  try {
    for (let i = 0; i < 5; i++) {
      await store.appendAccess({ tenant: "clinic", actor: { type: "key", id: i === 3 ? "snooper" : "dr-a" }, action: "read", caseId: `c${i}`, outcome: "success", client: "10.0.0.1", requestId: `r${i}`, detail: { status: 200 } });
    }
  } finally {
    await store.close();
  }
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("medmmv audit anchor / verify --anchor", () => {
  it("anchors the signed heads, proves them later, and names every event rewritten without the key", async () => {
    const env = { MEDMMV_DATA_DIR: dir, MEDMMV_AUDIT_SIGNING_KEY_FILE: keyFile };
    const anchor = await medmmvCli(["audit", "anchor"], env);
    expect(anchor.code, anchor.stderr).toBe(0);
    const doc = JSON.parse(anchor.stdout) as { heads: Array<{ tenant: string; seq: number; signature: string }> };
    expect(doc.heads).toEqual([expect.objectContaining({ tenant: "clinic", seq: 5, signature: expect.stringMatching(/^hmac-sha256:[0-9a-f]{16}:/) })]);
    const anchorFile = join(dir, "anchor.json");
    await writeFile(anchorFile, anchor.stdout);

    const ok = await medmmvCli(["audit", "verify", "--anchor", anchorFile], env);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/holds: 5 events.*signatures checked.*1 of 1 anchored heads/);

    // A forged anchor (the hash of a rewritten trail, the signature left as it was) is refused.
    await writeFile(join(dir, "forged.json"), anchor.stdout.replace(/"hash": "[0-9a-f]{64}"/, `"hash": "${"0".repeat(64)}"`));
    const forged = await medmmvCli(["audit", "verify", "--anchor", join(dir, "forged.json")], env);
    expect(forged.code).toBe(2);
    expect(forged.stderr).toMatch(/not signed by this key/);

    // The intruder removes event 4 (the snooping read) and the last event, and moves the head back:
    const db = new Database(join(dir, "medmmv.sqlite"));
    try {
      db.exec("DROP TRIGGER IF EXISTS medmmv_access_events_no_delete; DELETE FROM medmmv_access_events WHERE seq >= 4");
      const three = db.prepare("SELECT hash FROM medmmv_access_events WHERE seq = 3").get() as { hash: string };
      db.prepare("UPDATE medmmv_access_heads SET last_seq = 3, last_hash = ? WHERE tenant = 'clinic'").run(three.hash);
    } finally {
      db.close();
    }
    // every remaining signature holds, so only the anchor shows the cut
    expect((await medmmvCli(["audit", "verify"], env)).code).toBe(0);
    const cut = await medmmvCli(["audit", "verify", "--anchor", anchorFile], env);
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/BROKEN at event 5 of tenant "clinic": the anchored head/);

    // Without the key, verify says the signatures were not checked.
    const unkeyed = await medmmvCli(["audit", "verify"], { MEDMMV_DATA_DIR: dir });
    expect(unkeyed.code).toBe(0);
    expect(unkeyed.stdout).toMatch(/signatures NOT checked/);
  }, 120_000);
});
