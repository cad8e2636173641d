import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chestPain } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";
import { PG_TEST_URL, usePgSchemas } from "../../support/pg-schemas.js";

/**
 * Hostile search inputs on the Postgres store answer 400 with a typed error, never the 503
 * STORE_FAILED of a query the database refused: NUL bytes (Postgres text cannot hold them),
 * instants outside the years 0001-9999, cursors that decode to odd values.
 */
const AUDITOR = "search-probe-auditor-key-0123456789abcdef";
const sha = (k: string) => createHash("sha256").update(k).digest("hex");
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v), "utf8").toString("base64url");

const pg = usePgSchemas();
let t: InjectServer;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "medmmv-search-probes-"));
  await writeFile(join(dir, "keys.json"), JSON.stringify([{ id: "qa-1", sha256: sha(AUDITOR), tenant: "clinic", roles: ["auditor", "clinician"] }]));
  t = await startInjectServer({ env: { DATABASE_URL: PG_TEST_URL, MEDMMV_API_KEYS: "", MEDMMV_API_KEYS_FILE: join(dir, "keys.json") }, storeOptions: { pgSchema: pg.newSchema() } });
  expect((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: AUDITOR })).status).toBe(201);
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const probes: Array<[string, string]> = [
  ["answer with NUL", "/cases?answer=B%00"],
  ["model with NUL", "/cases?model=gpt%00x"],
  ["pathway with NUL", "/cases?pathway=%00"],
  ["submittedBy with NUL", "/cases?submittedBy=dr%00a"],
  ["from in year 10000", "/cases?from=%2B010000-01-01T00:00:00Z"],
  ["from before year 1", "/cases?from=-000100-01-01T00:00:00Z"],
  ["to at JS's last instant", "/cases?to=%2B275760-09-13T00:00:00Z"],
  ["a cursor whose instant is a bare number", `/cases?cursor=${b64(["1", "x"])}`],
  ["a cursor whose instant is in year 10000", `/cases?cursor=${b64(["+010000-01-01T00:00:00.000Z", "x"])}`],
  ["a cursor whose id holds NUL", `/cases?cursor=${b64(["2026-01-01T00:00:00.000Z", "x\u0000"])}`],
  ["a cursor that is not base64 JSON", "/cases?cursor=%FF%FE"],
  ["trail: actor with NUL", "/audit-events?actor=dr%00a"],
  ["trail: a cursor with a seq past bigint", `/audit-events?cursor=${b64(["clinic", 1e300])}`],
  ["trail: a cursor with a negative seq", `/audit-events?cursor=${b64(["clinic", -1])}`],
  ["trail: a cursor with a NUL tenant", `/audit-events?cursor=${b64(["cli\u0000nic", 1])}`],
  ["trail: from in year 0000", "/audit-events?from=0000-01-01"],
];

describe("search inputs on Postgres", () => {
  for (const [name, url] of probes) {
    it(`${name}: 400, not 503`, async () => {
      const r = await t.request({ url, key: AUDITOR });
      expect(r.status, `${url} → ${r.text}`).toBe(400);
      expect(JSON.stringify(r.body)).not.toMatch(/STORE_FAILED/);
    });
  }

  it("a well-formed search still answers", async () => {
    const r = await t.request({ url: "/cases?from=2000-01-01&to=9999-12-31T00:00:00Z&answer=B", key: AUDITOR });
    expect(r.status, r.text).toBe(200);
  });
});
