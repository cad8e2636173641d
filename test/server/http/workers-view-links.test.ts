import { TEST_REDIS_URL, redisPrefix } from "../../support/redis-prefix.js";
import { request as httpRequest } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { sharedBundle, spawnBundle } from "../../support/bundled-process.js";
import { recordReliability, type ReliabilityRow } from "../../support/reliability-recorder.js";
import { childServerEnv, keyedFetch } from "../../support/server-process.js";
import { until } from "../../support/until.js";
import { chestPain } from "./http-harness.js";

/**
 * `medmmv serve --workers 2` without MEDMMV_VIEW_LINK_SECRET: before the fix each worker made
 * its own secret and one link alternated 401/200 with the worker that took the connection.
 */
const rows: ReliabilityRow[] = [];
afterAll(({}, suite) => recordReliability("security-workers", rows, suite));

const KEY = "workers-view-links-key-0123456789abcdef";
const OPENS = 12;

/** A GET on a connection of its own (node:cluster deals connections, not requests, to the workers). */
function getOnNewConnection(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, headers: { connection: "close" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("serve --workers shares one view-link secret", () => {
  it(`a link made on one worker opens on every worker (${OPENS} fresh connections, no secret configured)`, async () => {
    const [cli, openai, dir] = await Promise.all([sharedBundle("cli"), startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }) }), mkdtemp(path.join(tmpdir(), "medmmv-workers-links-"))]);
    const env = childServerEnv({ openaiBaseUrl: openai.baseUrl, dataDir: dir, apiKey: KEY }, { HOST: "127.0.0.1", PORT: "0", MEDMMV_VIEW_LINK_SECRET: "", REDIS_URL: TEST_REDIS_URL, MEDMMV_REDIS_PREFIX: redisPrefix("workers-links") });
    const run = spawnBundle(cli, ["serve", "--workers", "2"], env);
    const logLines = () =>
      run
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    try {
      const listening = await until(() => {
        const ls = logLines().filter((l) => l.msg === "medmmv listening");
        return ls.length >= 2 ? ls : undefined;
      }, 60_000, "two workers listening");
      const address = listening[0]!.address as string;
      const api = keyedFetch(KEY);
      const made = await api(address, "/diagnose", { method: "POST", json: chestPain() });
      expect(made.status).toBe(201);
      const { caseId } = (await made.json()) as { caseId: string };
      const link = await api(address, `/cases/${caseId}/view-links`, { method: "POST", json: {} });
      expect(link.status).toBe(201);
      const { url } = (await link.json()) as { url: string };
      const statuses: number[] = [];
      for (let i = 0; i < OPENS; i++) statuses.push(await getOnNewConnection(address + url));
      expect(statuses).toEqual(Array(OPENS).fill(200));
      // Both workers served the link (so both verified it), each with 200.
      const served = await until(() => {
        const views = logLines().filter((l) => l.msg === "incoming request" && String((l.req as { url?: string } | undefined)?.url ?? "").includes("/view?token="));
        return views.length >= OPENS ? views : undefined;
      }, 10_000, "the view requests to be logged");
      const pids = new Set(served.map((l) => l.pid));
      expect(pids.size).toBe(2);
      rows.push({ suite: "security", scenario: `serve --workers 2 without MEDMMV_VIEW_LINK_SECRET: one link opened on ${OPENS} fresh connections`, trials: OPENS, outcome: `${statuses.filter((s) => s === 200).length} × 200, served by both workers`, itemsLost: 0 });
      expect((await run.kill("SIGTERM")).code).toBe(0);
    } finally {
      await run.kill("SIGKILL");
      await Promise.all([openai.close(), rm(dir, { recursive: true, force: true })]);
    }
  });
});
