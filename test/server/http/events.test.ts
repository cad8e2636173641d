import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chestPain, json, KEY_B, readSse, startTestServer, until, type TestServer } from "./http-harness.js";

let t: TestServer;
beforeAll(async () => {
  // Judges answer from the cache after the first case; caching off keeps every case's calls (and latency) real.
  t = await startTestServer({ heartbeatMs: 100, env: { MEDMMV_CACHE: "off" } });
});
afterAll(() => t.close());

async function submitAsync(): Promise<string> {
  const res = await t.api("/diagnose", { method: "POST", json: chestPain(), headers: { prefer: "respond-async" } });
  expect(res.status).toBe(202);
  return (await json<{ caseId: string }>(res)).caseId;
}

function types(events: { event: string }[]): string[] {
  return events.map((e) => e.event);
}

describe("GET /cases/{id}/events (SSE)", () => {
  it("streams one event per step in order, then closes after the final event; a late subscriber gets the same history", async () => {
    t.openai.setLatency(60);
    let live: Awaited<ReturnType<typeof readSse>>;
    let id: string;
    try {
      id = await submitAsync();
      const res = await t.api(`/cases/${id}/events`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      live = await readSse(res); // returns only when the server ends the stream
    } finally {
      t.openai.setLatency(0);
    }
    const seqs = live.events.map((e) => e.id);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1)); // 1..n, no gaps, no repeats
    const kinds = types(live.events);
    expect(kinds.slice(0, 2)).toEqual(["status", "status"]);
    expect(live.events[0]!.data.data).toEqual({ status: "queued" });
    expect(live.events[1]!.data.data).toEqual({ status: "running" });
    expect(kinds.filter((k) => k === "rollout")).toHaveLength(3);
    expect(kinds).toContain("evidence");
    expect(kinds).toContain("hd-verdict");
    expect(kinds).toContain("path-scored");
    expect(kinds.slice(-2)).toEqual(["scores", "final"]);
    // stage order: every rollout and evidence event precedes the first hd-verdict
    const firstHd = kinds.indexOf("hd-verdict");
    expect(kinds.lastIndexOf("rollout")).toBeLessThan(firstHd);
    expect(kinds.indexOf("evidence")).toBeLessThan(firstHd);
    expect(live.events.at(-1)!.data.data).toMatchObject({ status: "completed", answer: { option: "B" } });
    expect(live.raw).toContain(": heartbeat"); // the case took longer than one heartbeat interval

    const late = await readSse(await t.api(`/cases/${id}/events`));
    expect(late.events).toEqual(live.events);
  });

  it("continues after Last-Event-ID (header or query)", async () => {
    const id = await submitAsync();
    const all = await readSse(await t.api(`/cases/${id}/events`));
    const n = all.events.length;
    const tail = await readSse(await t.api(`/cases/${id}/events`, { headers: { "last-event-id": String(n - 3) } }));
    expect(tail.events).toEqual(all.events.slice(-3));
    const viaQuery = await readSse(await t.api(`/cases/${id}/events?lastEventId=${n - 1}`));
    expect(viaQuery.events).toEqual(all.events.slice(-1));
    // nothing after the final event: the stream ends at once
    const none = await readSse(await t.api(`/cases/${id}/events`, { headers: { "last-event-id": String(n) } }), { timeoutMs: 3_000 });
    expect(none.events).toEqual([]);
    expect((await t.api(`/cases/${id}/events`, { headers: { "last-event-id": "abc" } })).status).toBe(400);
  });

  it("a subscriber that joins mid-case gets the history first, then the live events, with nothing lost or doubled", async () => {
    t.openai.setLatency(150);
    try {
      const id = await submitAsync();
      await until(async () => ((await t.server.store.listEvents(id)).some((e) => e.type === "rollout") ? true : undefined), 10_000, "first rollout");
      const mid = await readSse(await t.api(`/cases/${id}/events`));
      const stored = await t.server.store.listEvents(id);
      expect(mid.events.map((e) => e.id)).toEqual(stored.map((e) => e.seq));
      expect(types(mid.events)).toEqual(stored.map((e) => e.type));
      expect(types(mid.events).at(-1)).toBe("final");
    } finally {
      t.openai.setLatency(0);
    }
  });

  it("tells live subscribers when the case is deleted, then ends the stream", async () => {
    t.openai.setLatency(3_000);
    try {
      const id = await submitAsync();
      const res = await t.api(`/cases/${id}/events`);
      const reading = readSse(res, { timeoutMs: 5_000 });
      await until(() => (t.server.service.hub.listenerCount(id) > 0 ? true : undefined), 3_000, "subscriber");
      expect((await t.api(`/cases/${id}`, { method: "DELETE" })).status).toBe(204);
      const { raw, events } = await reading;
      expect(types(events)).toEqual(["status", "status", "deleted"]);
      expect(events.at(-1)!.data).toEqual({ caseId: id });
      expect(raw).not.toContain("event: final");
    } finally {
      t.openai.setLatency(0);
    }
  });

  it("is 404 for another key's case", async () => {
    const id = await submitAsync();
    expect((await t.api(`/cases/${id}/events`, { key: KEY_B })).status).toBe(404);
    await readSse(await t.api(`/cases/${id}/events`));
  });
});
