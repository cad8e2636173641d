import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { defaultRedisPrefix } from "../../../src/core/deployment-identity.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { recordReliability, type ReliabilityRow } from "../../support/reliability-recorder.js";
import { TEST_REDIS_URL, redisPrefix } from "../../support/redis-prefix.js";
import { chestPain, startTestServer, until, type TestServer } from "../http/http-harness.js";

/**
 * Two deployments (two stores) on one Redis. With the default prefix each gets its own queue
 * (the prefix is derived from the store); with one prefix set for both by mistake, a worker
 * that takes the other deployment's job hands it back untouched. Either way each deployment
 * completes only its own cases, each once, and none waits for the reconciler to find it lost.
 * Reproduces a finding of the adversarial review and records its rows of RELIABILITY.md's
 * security table.
 */
const rows: ReliabilityRow[] = [];
afterAll(({}, suite) => recordReliability("security-queue", rows, suite));

const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
const prefixes = new Set<string>();
afterAll(async () => {
  for (const p of prefixes) {
    const keys: string[] = [];
    for await (const batch of redis.scanStream({ match: `${p}:*`, count: 500 }) as AsyncIterable<string[]>) keys.push(...batch);
    if (keys.length) await redis.del(...keys);
  }
  redis.disconnect();
});

const X_CASES = 4;
const Y_CASES = 3;
const terminal = (s: string) => ["completed", "abstained", "failed"].includes(s);
const REQUEUED = "queued again unfinished cases the queue did not know";
const FOREIGN = /another deployment/;

async function submit(s: TestServer, question: string): Promise<string> {
  const res = await s.api("/diagnose", { method: "POST", json: chestPain({ question }), headers: { prefer: "respond-async" } });
  expect(res.status).toBe(202);
  return ((await res.json()) as { caseId: string }).caseId;
}

/**
 * Deployment X queues its cases with one worker slot and a slow model, so most of them are
 * still waiting when deployment Y's idle worker starts on the same Redis; then Y queues its own.
 */
async function twoDeployments(prefixEnv: Record<string, string>) {
  const slow = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: 200 });
  const fast = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: 20 });
  const env = { REDIS_URL: TEST_REDIS_URL, MEDMMV_ENGINE_LOCK_MS: "2000", MEDMMV_RECONCILE_MS: "2000", MEDMMV_RATE_LIMIT_PER_MIN: "100000", ...prefixEnv };
  const servers: TestServer[] = [];
  try {
    const x = await startTestServer({ openai: slow, env: { ...env, MEDMMV_ENGINE_CONCURRENCY: "1" } });
    servers.push(x);
    prefixes.add(prefixEnv.MEDMMV_REDIS_PREFIX ?? defaultRedisPrefix({ databaseUrl: null, dataDir: x.dataDir }));
    const started = Date.now();
    const xIds: string[] = [];
    for (let i = 0; i < X_CASES; i++) xIds.push(await submit(x, `Which diagnosis fits deployment X's case ${i}?`));
    const y = await startTestServer({ openai: fast, env: { ...env, MEDMMV_ENGINE_CONCURRENCY: "2" } });
    servers.push(y);
    prefixes.add(prefixEnv.MEDMMV_REDIS_PREFIX ?? defaultRedisPrefix({ databaseUrl: null, dataDir: y.dataDir }));
    const yIds: string[] = [];
    for (let i = 0; i < Y_CASES; i++) yIds.push(await submit(y, `Which diagnosis fits deployment Y's case ${i}?`));
    const done = (s: TestServer, ids: string[]) =>
      until(
        async () => {
          const all = await Promise.all(ids.map((id) => s.server.store.getCase(id)));
          return all.every((c) => c && terminal(c.status)) ? true : undefined;
        },
        120_000,
        "every case of the deployment to finish",
      );
    await Promise.all([done(x, xIds), done(y, yIds)]);
    const seconds = (Date.now() - started) / 1000;
    const runs = async (s: TestServer, id: string) => (await s.server.store.listEvents(id)).filter((e) => e.type === "status" && e.data.status === "running").length;
    for (const id of xIds) expect(await runs(x, id), `runs of X's ${id}`).toBe(1);
    for (const id of yIds) expect(await runs(y, id), `runs of Y's ${id}`).toBe(1);
    const finished = (s: TestServer) => s.logs.lines().filter((l) => l.msg === "case finished").length;
    const requeued = (s: TestServer) => s.logs.lines().filter((l) => l.msg === REQUEUED).length;
    return { x, y, seconds, finished: [finished(x), finished(y)], requeued: requeued(x) + requeued(y), handedBack: y.logs.lines().filter((l) => FOREIGN.test(String(l.msg))).length + x.logs.lines().filter((l) => FOREIGN.test(String(l.msg))).length, servers };
  } finally {
    for (const s of servers) await s.close();
    await slow.close();
    await fast.close();
  }
}

describe("two deployments on one Redis", () => {
  it("with the default prefix (distinct stores), each completes only its own cases, each once, none lost to the other", async () => {
    const r = await twoDeployments({});
    // Derived from each store, so the two queues are apart.
    const [px, py] = r.servers.map((s) => defaultRedisPrefix({ databaseUrl: null, dataDir: s.dataDir }));
    expect(px).not.toBe(py);
    expect(r.finished).toEqual([X_CASES, Y_CASES]);
    expect(r.requeued, "cases the reconciler had to queue again (taken and completed by the other deployment)").toBe(0);
    rows.push({
      suite: "security",
      scenario: `two deployments (distinct SQLite stores) on one Redis, MEDMMV_REDIS_PREFIX unset; X queues ${X_CASES} cases (one worker slot), Y starts idle and queues ${Y_CASES}`,
      trials: X_CASES + Y_CASES,
      outcome: `prefixes derived from the stores differ; X finished ${r.finished[0]}/${X_CASES}, Y ${r.finished[1]}/${Y_CASES}, each run once; 0 queued again; all done in ${r.seconds.toFixed(1)} s`,
      itemsLost: 0,
    });
  }, 240_000);

  it("with one MEDMMV_REDIS_PREFIX set for both, a worker hands the other deployment's jobs back untouched; each still completes only its own", async () => {
    const r = await twoDeployments({ MEDMMV_REDIS_PREFIX: redisPrefix("foreign") });
    // Y's idle worker met X's waiting jobs (X runs one at a time on a slow model), so the hand-back was exercised.
    expect(r.handedBack).toBeGreaterThan(0);
    expect(r.finished).toEqual([X_CASES, Y_CASES]);
    expect(r.requeued, "cases the reconciler had to queue again (taken and completed by the other deployment)").toBe(0);
    rows.push({
      suite: "security",
      scenario: `the same two deployments with one MEDMMV_REDIS_PREFIX set for both (a shared queue)`,
      trials: X_CASES + Y_CASES,
      outcome: `Y took X's waiting jobs and handed them back untouched (${r.handedBack} warning(s) naming MEDMMV_REDIS_PREFIX); X finished ${r.finished[0]}/${X_CASES}, Y ${r.finished[1]}/${Y_CASES}, each run once; 0 queued again; all done in ${r.seconds.toFixed(1)} s`,
      itemsLost: 0,
    });
  }, 240_000);
});
