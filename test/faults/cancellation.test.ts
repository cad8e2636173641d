import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";
import { chestPain, json, startTestServer, until, type TestServer } from "../server/http/http-harness.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { nowMs } from "../../src/scripted/faults.js";
import { recordReliability, type ReliabilityRow } from "../support/reliability-recorder.js";
import type { ScriptedCallLog } from "../../src/scripted/scripted-openai-server.js";

/**
 * DELETE of a running case, at several points of its pipeline, while another case runs
 * beside it: the deleted case's calls in flight are cut (the model server sees the
 * disconnect), its queued calls never start, nothing is retried over a window longer than
 * a call plus its backoff — and the other case finishes untouched.
 *
 * The deleted case's calls after the first N are held open by the scripted server (a
 * "hold" fault), so the DELETE lands while they are in flight however slow the machine is;
 * waiting to catch a call in the first moments of its latency raced the poll.
 */
const LATENCY_MS = 400;
/** Longer than a call and its first retry backoff: a retry or a queued call would show up. */
const QUIET_WINDOW_MS = 1_500;
const MARK_DELETED = "Cancellation-marker-7Q";

let t: TestServer;
const rows: ReliabilityRow[] = [];
const outcomes: string[] = [];

beforeAll(async () => {
  t = await startTestServer({
    scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"], repairsNeeded: { A: 1 } }),
    env: {
      // Few model calls in flight per process: part of the deleted case's work waits in the limiter.
      MEDMMV_MAX_CONCURRENCY: "3",
      MEDMMV_LLM_BACKOFF_BASE_MS: "200",
      MEDMMV_RATE_LIMIT_PER_MIN: "100000",
    },
  });
  t.openai.setLatency(LATENCY_MS);
});
afterAll(async ({}, suite) => {
  if (outcomes.length)
    rows.push({
      suite: "cancel",
      scenario: `DELETE of a running case beside a running case (model latency ${LATENCY_MS} ms, ${QUIET_WINDOW_MS} ms quiet window)`,
      trials: outcomes.length,
      outcome: `every in-flight call of the deleted case cut (disconnect seen), none started or retried after the DELETE, the other case completed; ${outcomes.join("; ")}`,
      itemsLost: 0,
    });
  recordReliability("cancellation", rows, suite);
  await t?.close();
});

/** The deleted case's calls: its first N answered (a zero-length "latency" fault tags them in the log), the rest held. */
const ofDeleted = (c: ScriptedCallLog) => c.fault === "latency" || c.fault === "hold";

describe("DELETE of a running case", () => {
  // After how many answered calls of the deleted case the DELETE comes: stage 1, evidence, refinement.
  for (const answeredBefore of [0, 4, 8]) {
    it(`after ${answeredBefore} answered calls: in-flight calls aborted, no further calls, the neighbour unaffected`, async () => {
      t.openai.reset();
      t.openai.clearFaults();
      if (answeredBefore > 0) t.openai.addFault({ kind: "latency", ms: 0, textIncludes: MARK_DELETED, times: answeredBefore });
      t.openai.addFault({ kind: "hold", textIncludes: MARK_DELETED });
      const doomed = await t.api("/diagnose", {
        method: "POST",
        json: chestPain({ question: `Which diagnosis fits best? (${MARK_DELETED})` }),
        headers: { prefer: "respond-async" },
      });
      const neighbour = await t.api("/diagnose", { method: "POST", json: chestPain({ question: "What is the most likely diagnosis here?" }), headers: { prefer: "respond-async" } });
      expect(doomed.status).toBe(202);
      expect(neighbour.status).toBe(202);
      const doomedId = (await json<{ caseId: string }>(doomed)).caseId;
      const neighbourId = (await json<{ caseId: string }>(neighbour)).caseId;

      await until(() => {
        const s = t.openai.stats();
        return s.log.filter(ofDeleted).filter((c) => c.status === 200).length === answeredBefore && s.held > 0 ? true : undefined;
      }, 20_000, `${answeredBefore} answered calls and one held open`);
      const open = t.openai.stats().log.filter(ofDeleted).filter((c) => c.end === null);
      expect(open.length).toBeGreaterThan(0);

      const del = await t.api(`/cases/${doomedId}`, { method: "DELETE" });
      expect(del.status).toBe(204);
      const deletedAt = nowMs();

      // The calls that were open end as disconnects, not answers.
      await until(() => (t.openai.stats().log.filter(ofDeleted).every((c) => c.end !== null) ? true : undefined), 3_000, "the deleted case's calls to close");
      await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
      const after = t.openai.stats().log.filter(ofDeleted);
      const cut = after.filter((c) => open.some((o) => o.globalIndex === c.globalIndex));
      expect(cut.every((c) => c.disconnected && c.status === 0)).toBe(true);
      // Every call of the deleted case was answered before the DELETE returned, or cut.
      expect(after.filter((c) => !(c.status === 200 ? c.end! <= deletedAt : c.disconnected)).map((c) => c.agent)).toEqual([]);
      // Nothing new for the deleted case: no retry of a cut call, no queued call let through.
      const startedLater = after.filter((c) => c.start > deletedAt);
      expect(startedLater.map((c) => c.agent)).toEqual([]);
      expect((await t.api(`/cases/${doomedId}`)).status).toBe(404);

      // The neighbour ran to the end without losing a call.
      const done = await until(async () => {
        const v = await json<{ status: string; result: unknown }>(await t.api(`/cases/${neighbourId}`));
        return v.status === "running" || v.status === "queued" ? undefined : v;
      }, 30_000, "the neighbouring case");
      expect(done.status).toBe("completed");
      expect(DiagnosisResult.parse(done.result).answer?.option).toBe("B");
      expect(t.openai.stats().log.filter((c) => !ofDeleted(c)).every((c) => !c.disconnected && c.status === 200)).toBe(true);
      const allCut = after.filter((c) => c.disconnected);
      outcomes.push(`after ${answeredBefore} answered: ${allCut.length} cut (${[...new Set(allCut.map((c) => c.agent))].join("+")})`);
    }, 60_000);
  }
});
