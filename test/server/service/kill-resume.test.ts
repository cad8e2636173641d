import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { childServerEnv, keyedFetch, spawnServer, type ServerProcess } from "../../support/server-process.js";
import { chestPain, until, withDelays } from "../http/http-harness.js";
import { pngWithCanvas } from "../../../src/scripted/image-bytes.js";
import { untilCheckpointedInFile } from "../../support/checkpoint-writes.js";
import { SCRIPTED_MODEL_PROFILES } from "../../../src/scripted/scripted-config.js";

const KEY = "kill-test-key-0123456789abcdefghijkl";

/**
 * The first two image-doctor calls hang, so when the server dies both cases are
 * mid-flight: rollouts done (checkpointed task writes), text-doctor done (its node is
 * not, but the temperature-0 reply is in the response cache), image-doctor cut off.
 */
const scenario = withDelays(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), { "image-doctor": (req) => (req.callIndex < 2 ? 60_000 : 0) });

let openai: ScriptedOpenAI;
let dataDir: string;
let proc: ServerProcess | null = null;

function env(): Record<string, string> {
  // The scripted models' profiles are stated, as an operator would for models the catalog does not know: their first
  // call does not go alone (model-adaptation.ts), so the hanging image-doctor does not hold the rollouts back.
  return childServerEnv({ openaiBaseUrl: openai.baseUrl, dataDir, apiKey: KEY }, { MEDMMV_MAX_REPAIRS: "1", MEDMMV_MODEL_PROFILES: SCRIPTED_MODEL_PROFILES });
}

const api = keyedFetch(KEY);

beforeAll(async () => {
  openai = await startScriptedOpenAI({ scenario });
  dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-kill-"));
});
afterAll(async () => {
  await proc?.kill("SIGKILL");
  await openai.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe("kill -9 mid-case", () => {
  it("resumes every accepted case on the next start without repeating completed model calls", async () => {
    proc = await spawnServer(env());
    const ids: string[] = [];
    for (const question of ["What is the most likely diagnosis?", "Which diagnosis best explains the findings?"]) {
      const images = [{ id: "film", caption: "Chest film", data: pngWithCanvas(64, 64).toString("base64") }];
      const res = await api(proc.address, "/diagnose", { method: "POST", json: chestPain({ question, images }), headers: { prefer: "respond-async" } });
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { caseId: string }).caseId);
    }
    const base1 = proc.address;
    // Both cases: rollouts and text-doctor finished and recorded; image-doctor hanging.
    for (const id of ids) {
      await until(async () => {
        const v = (await (await api(base1, `/cases/${id}`)).json()) as { progress: { done: number } | null };
        return v.progress && v.progress.done >= 4 ? true : undefined;
      }, 20_000, `rollouts and text-doctor of ${id}`);
    }
    expect(openai.stats().byAgent).toMatchObject({ rollout: 6, "text-doctor": 2, "image-doctor": 2 });
    // The rollouts' task writes reach the checkpointer after their events: wait for them, not for a pause.
    for (const id of ids) await untilCheckpointedInFile(dataDir, id, "rollouts", 3);

    await proc.kill("SIGKILL");
    expect(proc.child.signalCode).toBe("SIGKILL");
    const firstOutput = proc.output();
    expect(firstOutput).not.toContain("case finished");

    proc = await spawnServer(env());
    const base2 = proc.address;
    const results: DiagnosisResult[] = [];
    for (const id of ids) {
      const view = await until(async () => {
        const v = (await (await api(base2, `/cases/${id}`)).json()) as { status: string; result: unknown };
        return v.status !== "running" && v.status !== "queued" ? v : undefined;
      }, 20_000, `case ${id} to finish after restart`);
      expect(view.status).toBe("completed");
      results.push(DiagnosisResult.parse(view.result));
    }
    const stats = openai.stats();
    expect(stats.byAgent.rollout).toBe(6); // no completed rollout was called again (checkpoint)
    expect(stats.byAgent["text-doctor"]).toBe(2); // its node re-ran, but the deterministic reply came from the cache
    expect(stats.byAgent["image-doctor"]).toBe(4); // the two cut-off calls were made again
    expect(stats.disconnects).toBeGreaterThanOrEqual(2);
    for (const r of results) {
      expect(r.usage.byAgent["text-doctor"]).toMatchObject({ cacheHits: 1 });
      expect(r.answer?.option).toBe("B");
      expect(r.stability.rolloutAnswers).toEqual(["B", "B", "A"]);
    }
    // Nothing accepted was lost: both cases are listed, with full event histories.
    const list = (await (await api(base2, "/cases")).json()) as { items: { caseId: string; status: string }[] };
    expect(list.items.map((i) => i.caseId).sort()).toEqual([...ids].sort());
    expect(proc.output()).toContain("resumed unfinished cases");
  }, 120_000);
});
