import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/core/config.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { recordReliability, type ReliabilityRow } from "../../support/reliability-recorder.js";
import { chestPain, json, startTestServer, withDelays } from "./http-harness.js";

/**
 * A view link goes to EHR users for up to 24 hours: whoever holds it must not be able to use
 * up the event streams of the key that made it. Streams opened through a link count against
 * a cap of their own (MEDMMV_MAX_VIEW_LINK_STREAMS_PER_KEY), apart from the key's. Reproduces
 * a finding of the adversarial review and records its row of RELIABILITY.md's security table.
 */
const rows: ReliabilityRow[] = [];
afterAll(({}, suite) => recordReliability("security-view-streams", rows, suite));

describe("a view-link holder cannot use up the key's event streams", () => {
  it("20 streams through one view link stop at the links' own cap, and the key's own GET /cases/{id}/events still opens", async () => {
    // The defaults, as a deployment has them: the links' cap is the smaller.
    const defaults = loadConfig({}).http;
    expect(defaults.maxViewLinkStreamsPerKey).toBeLessThan(defaults.maxEventStreamsPerKey);
    const LINK_CAP = defaults.maxViewLinkStreamsPerKey;
    // The rollouts are held back, so the case stays running and its streams stay open.
    const t = await startTestServer({ scenario: withDelays(clinicalScenario({ rolloutAnswers: ["B"] }), { rollout: 120_000 }) });
    const streams: AbortController[] = [];
    const open = async (url: string, key?: null): Promise<number> => {
      const ctrl = new AbortController();
      const res = await t.api(url, { signal: ctrl.signal, ...(key === null ? { key } : {}) });
      if (res.status === 200) streams.push(ctrl);
      else await res.arrayBuffer();
      return res.status;
    };
    try {
      const accepted = await t.api("/diagnose", { method: "POST", json: chestPain(), headers: { prefer: "respond-async" } });
      expect(accepted.status).toBe(202);
      const { caseId } = await json<{ caseId: string }>(accepted);
      const link = await json<{ url: string }>(await t.api(`/cases/${caseId}/view-links`, { method: "POST", json: { ttlSec: 24 * 3600 } }));
      const token = new URL(link.url, t.base).searchParams.get("token")!;
      const viaLink: number[] = [];
      for (let i = 0; i < 20; i++) viaLink.push(await open(`/cases/${caseId}/view/events?token=${encodeURIComponent(token)}`, null));
      expect(viaLink.slice(0, LINK_CAP)).toEqual(Array(LINK_CAP).fill(200));
      expect(viaLink.slice(LINK_CAP)).toEqual(Array(20 - LINK_CAP).fill(429));
      const own = await open(`/cases/${caseId}/events`);
      expect(own).toBe(200);
      expect((await t.api(`/cases/${caseId}`, { method: "DELETE" })).status).toBe(204);
      rows.push({
        suite: "security",
        scenario: `20 event streams through one 24-hour view link on a running case (default caps: ${defaults.maxEventStreamsPerKey} per key, ${LINK_CAP} for the key's links)`,
        trials: 21,
        outcome: `link: ${viaLink.filter((s) => s === 200).length} × 200 then ${viaLink.filter((s) => s === 429).length} × 429; the key's own GET /cases/{id}/events: ${own}`,
        itemsLost: 0,
      });
    } finally {
      for (const s of streams) s.abort();
      await t.close();
    }
  });
});
