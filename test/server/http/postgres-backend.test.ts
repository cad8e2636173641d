import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { PG_TEST_URL } from "../../support/pg-schemas.js";
import { untilCheckpointed } from "../../support/checkpoint-writes.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { chestPain, json, readSse, startTestServer, until, withDelays } from "./http-harness.js";

/**
 * The service on Postgres (DATABASE_URL): the same API, and durable runs through the
 * Postgres checkpointer. CI provides the database, so an unreachable one fails the file.
 */
const schema = `medmmv_http_${randomBytes(6).toString("hex")}`;

let admin: pg.Client;
let openai: ScriptedOpenAI;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: PG_TEST_URL, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }) });
});
afterAll(async () => {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
  await admin.end();
  await openai.close();
});

const start = () => startTestServer({ openai, env: { DATABASE_URL: PG_TEST_URL }, storeOptions: { pgSchema: schema } });

describe("HTTP API on Postgres", () => {
  it("runs a case, then resumes an interrupted one after a restart without redoing its rollouts", async () => {
    const first = await start();
    let caseId: string;
    try {
      expect(first.server.store.backend).toBe("postgres");
      const res = await first.api("/diagnose", { method: "POST", json: chestPain() });
      expect(res.status).toBe(201);
      const done = DiagnosisResult.parse(await res.json());
      const replay = await readSse(await first.api(`/cases/${done.caseId}/events`));
      expect(replay.events.at(-1)!.event).toBe("final");
      expect((await first.api(`/cases/${done.caseId}/evidence-graph?scope=full`)).status).toBe(200);

      // The second case's text-doctor call hangs; stop the server once its rollouts are recorded.
      openai.reset();
      openai.setScenario(withDelays(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), { "text-doctor": (req) => (req.callIndex === 0 ? 4_000 : 0) }));
      const accepted = await first.api("/diagnose", { method: "POST", json: chestPain({ question: "Which diagnosis is most likely?" }), headers: { prefer: "respond-async" } });
      caseId = (await json<{ caseId: string }>(accepted)).caseId;
      await until(async () => ((await first.server.store.listEvents(caseId)).filter((e) => e.type === "rollout").length === 3 ? true : undefined), 10_000, "rollouts");
      // Their task writes reach the checkpointer after the events: the resume below must not redo them.
      await untilCheckpointed(first.server.store.checkpointer(), caseId, "rollouts", 3);
    } finally {
      await first.close();
    }
    const second = await start();
    try {
      const view = await until(async () => {
        const v = await json<{ status: string; result: unknown }>(await second.api(`/cases/${caseId}`));
        return v.status === "completed" ? v : undefined;
      }, 15_000, "resumed case");
      expect(DiagnosisResult.parse(view.result).stability.rolloutAnswers).toEqual(["B", "B", "A"]);
      expect(openai.stats().byAgent.rollout).toBe(3);
      expect(openai.stats().byAgent["text-doctor"]).toBe(2);
      const list = await json<{ items: unknown[] }>(await second.api("/cases"));
      expect(list.items).toHaveLength(2);
    } finally {
      await second.close();
    }
  });
});
