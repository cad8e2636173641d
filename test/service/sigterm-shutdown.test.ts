import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/open-store.js";
import { clinicalScenario } from "../support/clinical-scenario.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../support/scripted-openai-server.js";
import { childServerEnv, keyedFetch, spawnServer, type ServerProcess } from "../support/server-process.js";
import { chestPain, until, withDelays } from "../http/http-harness.js";

const KEY = "term-test-key-0123456789";

/** Text-doctor hangs, so the case is mid-flight (rollouts done) when the signal arrives. */
const scenario = withDelays(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), { "text-doctor": 60_000 });

let openai: ScriptedOpenAI;
let proc: ServerProcess | null = null;

function env(dataDir: string): Record<string, string> {
  return childServerEnv({ openaiBaseUrl: openai.baseUrl, dataDir, apiKey: KEY });
}

const api = keyedFetch(KEY);

beforeAll(async () => {
  openai = await startScriptedOpenAI({ scenario });
});
afterAll(async () => {
  await proc?.kill("SIGKILL");
  await openai.close();
});

describe("medmmv serve under SIGTERM", () => {
  it("SIGTERM shuts down gracefully: exits 0 at once, the case stays running with its history, to resume at the next start", async () => {
    const sigDir = await mkdtemp(path.join(tmpdir(), "medmmv-term-"));
    try {
      proc = await spawnServer(env(sigDir));
      const base = proc.address;
      const res = await api(base, "/diagnose", { method: "POST", json: chestPain(), headers: { prefer: "respond-async" } });
      const { caseId } = (await res.json()) as { caseId: string };
      await until(async () => {
        const v = (await (await api(base, `/cases/${caseId}`)).json()) as { progress: { done: number } | null };
        return v.progress && v.progress.done >= 3 ? true : undefined;
      }, 15_000, "rollouts");
      const t0 = Date.now();
      await proc.kill("SIGTERM");
      expect(proc.child.exitCode).toBe(0);
      expect(Date.now() - t0).toBeLessThan(5_000); // the hanging text-doctor call was not waited for
      expect(proc.output()).toContain("case interrupted by shutdown");
      proc = null;
      const store = await openStore({ databaseUrl: null, dataDir: sigDir });
      try {
        const record = await store.getCase(caseId);
        expect(record?.status).toBe("running");
        expect((await store.listUnfinished()).map((r) => r.id)).toEqual([caseId]);
        const types = (await store.listEvents(caseId)).map((e) => e.type);
        expect(types.filter((x) => x === "rollout")).toHaveLength(3);
        expect(types).not.toContain("final");
      } finally {
        await store.close();
      }
    } finally {
      await rm(sigDir, { recursive: true, force: true });
    }
  }, 120_000);
});
