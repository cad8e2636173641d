import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { openStore } from "../../../src/server/store/open-store.js";
import { untilCheckpointedInFile } from "../../support/checkpoint-writes.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { childServerEnv, keyedFetch, spawnServer, type ServerProcess } from "../../support/server-process.js";
import { chestPain, until, withDelays } from "../http/http-harness.js";

const KEY = "term-test-key-0123456789abcdefghijkl";

/** The first text-doctor call hangs, so the case is mid-flight (rollouts done) when the signal arrives; the resumed one answers. */
const scenario = withDelays(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), { "text-doctor": (req) => (req.callIndex === 0 ? 60_000 : 0) });

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
  it("SIGTERM shuts down gracefully: exits 0 at once, the case stays running with its history, and the next start resumes it without redoing its rollouts", async () => {
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
      // What the resume below must not redo: the rollouts' task writes in the checkpointer.
      await untilCheckpointedInFile(sigDir, caseId, "rollouts", 3);
      await proc.kill("SIGTERM");
      expect(proc.child.exitCode).toBe(0);
      // The hanging (60 s) text-doctor call was not waited for: the client dropped it (a call waited out would have been answered).
      await until(() => (openai.stats().log.find((l) => l.agent === "text-doctor")?.disconnected ? true : undefined), 10_000, "the hung text-doctor call dropped");
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

      // The promised resume: the next start picks the case up and finishes it.
      expect(openai.stats().byAgent).toMatchObject({ rollout: 3, "text-doctor": 1 });
      proc = await spawnServer(env(sigDir));
      const base2 = proc.address;
      const view = await until(async () => {
        const v = (await (await api(base2, `/cases/${caseId}`)).json()) as { status: string; result: unknown };
        return v.status !== "running" && v.status !== "queued" ? v : undefined;
      }, 30_000, "the resumed case to finish");
      expect(view.status).toBe("completed");
      const result = DiagnosisResult.parse(view.result);
      expect(result.stability.rolloutAnswers).toEqual(["B", "B", "A"]);
      // No rollout called again (checkpointed); text-doctor, cut off by the shutdown, called once more.
      expect(openai.stats().byAgent).toMatchObject({ rollout: 3, "text-doctor": 2 });
      await proc.kill("SIGTERM");
      proc = null;
      const after = await openStore({ databaseUrl: null, dataDir: sigDir });
      try {
        const events = await after.listEvents(caseId);
        expect(events.filter((e) => e.type === "final")).toHaveLength(1);
        expect(events.filter((e) => e.type === "status" && e.data.resumed === true)).toHaveLength(1);
        expect(await after.listUnfinished()).toEqual([]);
      } finally {
        await after.close();
      }
    } finally {
      await rm(sigDir, { recursive: true, force: true });
    }
  }, 120_000);
});
