import { mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startServer } from "../../../../src/server/server.js";
import { openCorpusIndex } from "../../../../src/core/search/local/open-corpus-index.js";
import { prepareDocument } from "../../../../src/core/search/local/corpus-record.js";
import { SQLITE_FILE_NAME } from "../../../../src/core/database/database-names.js";
import { scriptedConfig } from "../../../../src/scripted/scripted-config.js";

let dataDir: string;
beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), "medmmv-server-search-"));
  const index = await openCorpusIndex({ databaseUrl: null, dataDir });
  try {
    await index.upsert("cardiology", [prepareDocument({ id: "acs", title: "Acute coronary syndrome", text: "Chest pain radiating to the left arm." })]);
  } finally {
    await index.close();
  }
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Descriptors this process holds on the store file (Linux only: elsewhere null). */
function handlesOn(file: string): number | null {
  let fds: string[];
  try {
    fds = readdirSync("/proc/self/fd");
  } catch {
    return null;
  }
  return fds.filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false;
    }
  }).length;
}

describe("startServer with the local corpus", () => {
  it("closes the search provider, and with it the corpus's own store connection, when the server closes", async () => {
    const config = scriptedConfig("http://127.0.0.1:9/v1", { HOST: "127.0.0.1", PORT: "0", MEDMMV_DATA_DIR: dataDir, MEDMMV_SEARCH: "local" });
    const server = await startServer(config, { handleSignals: false });
    const search = server.service.agentDeps.search;
    expect(search.name).toBe("local");
    const close = vi.spyOn(search, "close");
    // A search opens the corpus index (it is opened lazily, on the first search).
    expect((await search.search("chest pain", {})).results.length).toBeGreaterThan(0);
    const file = path.resolve(dataDir, SQLITE_FILE_NAME);
    const open = handlesOn(file);
    if (open !== null) expect(open).toBeGreaterThan(0);
    await server.close();
    expect(close).toHaveBeenCalledTimes(1);
    await close.mock.results[0]!.value;
    const left = handlesOn(file);
    if (left !== null) expect(left).toBe(0);
  });
});
