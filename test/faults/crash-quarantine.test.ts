import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaseEvent } from "../../src/server/store/case-store.js";
import { SqliteStore } from "../../src/server/store/sqlite-store.js";
import { sharedBundle, startBundledServer, type Bundle, type BundledServer } from "../support/bundled-process.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { recordReliability, type ReliabilityRow } from "../support/reliability-recorder.js";
import { startScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { childServerEnv, keyedFetch, submitAsync, waitTerminal } from "../support/server-process.js";
import { chestPain } from "../server/http/http-harness.js";
import { until } from "../support/until.js";
import { SCRIPTED_MODEL_PROFILES } from "../../src/scripted/scripted-config.js";

/**
 * The crash quarantine, with real processes: a case whose run takes its process down (here:
 * the test SIGKILLs the process each time the case is running, as an out-of-memory kill
 * would) is started at most MEDMMV_MAX_RUN_STARTS times; the next start fails it with
 * RUN_CRASHED instead of running it, its owner reads why, no later process runs it again,
 * and every other case finishes.
 */
const KEY = "crash-quarantine-key-0123456789abcdef";
const LIMIT = 2;
/** The hostile case's model calls hang (it never finishes by itself), found by this word in its text. */
const MARKER = "quarantine-marker-hangs";
const api = keyedFetch(KEY);
const rows: ReliabilityRow[] = [];
let bundle: Bundle;
let dir: string;

beforeAll(async () => {
  bundle = await sharedBundle("server");
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-quarantine-"));
});
afterAll(async ({}, suite) => {
  recordReliability("crash-quarantine", rows, suite);
  await rm(dir, { recursive: true, force: true });
});

async function storedEvents(id: string): Promise<CaseEvent[]> {
  const store = new SqliteStore({ dataDir: dir });
  await store.init();
  try {
    return await store.listEvents(id);
  } finally {
    await store.close();
  }
}

const starts = (events: CaseEvent[]) => events.filter((e) => e.type === "status" && e.data.status === "running").length;

describe("crash quarantine", () => {
  it(`a case that kills its process ${LIMIT} times fails once with RUN_CRASHED; every other case finishes; nothing runs it again`, async () => {
    const openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: 30 });
    openai.addFault({ kind: "hang", textIncludes: MARKER });
    // The scripted models have profiles, so no first call goes alone: the hostile case's hanging call
    // would otherwise be each process's first contact, and every other case would wait out
    // FIRST_CONTACT_WAIT_MS (5 s) behind it, twice a run.
    const env = childServerEnv({ openaiBaseUrl: openai.baseUrl, dataDir: dir, apiKey: KEY }, { MEDMMV_MAX_RUN_STARTS: String(LIMIT), MEDMMV_RATE_LIMIT_PER_MIN: "100000", MEDMMV_MODEL_PROFILES: SCRIPTED_MODEL_PROFILES });
    const servers: BundledServer[] = [];
    const others: string[] = [];
    try {
      let server = await startBundledServer(bundle, env);
      servers.push(server);
      const [hostile] = await submitAsync(api, server.address, [chestPain({ notes: `A 58-year-old man with chest pain. ${MARKER}` })]);
      let seenCalls = 0;
      for (let kill = 1; kill <= LIMIT; kill++) {
        // An innocent case accepted and finished in the same process, before the crash.
        const [other] = await submitAsync(api, server.address, [chestPain({ question: `Which diagnosis fits best (round ${kill})?` })]);
        others.push(other!);
        await waitTerminal(api, server.address, [other!], 60_000);
        // The hostile case is mid-run: its start is counted and a model call of it is open.
        await until(async () => (starts(await storedEvents(hostile!)) === kill ? true : undefined), 30_000, `start ${kill} of the hostile case`);
        const from = seenCalls;
        await until(async () => (openai.stats().log.slice(from).some((c) => c.end === null) ? true : undefined), 30_000, "a hanging call of the hostile case");
        seenCalls = openai.stats().log.length;
        await server.kill("SIGKILL");
        server = await startBundledServer(bundle, env);
        servers.push(server);
      }
      // The start past the limit: quarantined, not run.
      const [view] = await waitTerminal(api, server.address, [hostile!], 30_000);
      expect(view!.status).toBe("failed");
      const record = (await (await api(server.address, `/cases/${hostile}`)).json()) as { error: { code: string; message: string } | null };
      expect(record.error?.code).toBe("RUN_CRASHED");
      expect(record.error?.message).toMatch(/started 2 times and never finished/);
      // Every other case finishes, one more accepted after the quarantine too.
      const [late] = await submitAsync(api, server.address, [chestPain({ question: "What explains the ECG after the quarantine?" })]);
      others.push(late!);
      const views = await waitTerminal(api, server.address, others, 60_000);
      expect(views.map((v) => v.status)).toEqual(others.map(() => "completed"));
      // A further restart runs nothing of it again.
      await server.kill("SIGTERM");
      const callsBefore = openai.stats().log.length;
      server = await startBundledServer(bundle, env);
      servers.push(server);
      await waitTerminal(api, server.address, [hostile!], 10_000);
      await server.kill("SIGTERM");
      expect(openai.stats().log.length).toBe(callsBefore);
      const events = await storedEvents(hostile!);
      expect(events.filter((e) => e.type === "final")).toHaveLength(1);
      expect(starts(events)).toBe(LIMIT);
      for (const id of others) expect((await storedEvents(id)).filter((e) => e.type === "final"), `final events of ${id}`).toHaveLength(1);
      rows.push({
        suite: "crash-quarantine",
        scenario: `one case SIGKILLs its server process each time it runs (MEDMMV_MAX_RUN_STARTS=${LIMIT}), ${others.length} other cases`,
        trials: 1,
        outcome: `the case ran ${LIMIT} times, then failed once with RUN_CRASHED at the next start and was not run again; the ${others.length} other cases completed, one final event each`,
        itemsLost: 0,
      });
    } finally {
      for (const s of servers) await s.kill("SIGKILL");
      await openai.close();
    }
  }, 240_000);
});
