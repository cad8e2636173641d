import { connect, type Socket } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { recordReliability, type ReliabilityRow } from "../../support/reliability-recorder.js";
import { chestPain, json, KEY_A, startTestServer, until, withDelays } from "./http-harness.js";

/**
 * Attacks on sockets rather than on content: slow clients holding connections, and one key
 * holding event streams. Loopback only, a bounded number of sockets.
 */
const rows: ReliabilityRow[] = [];
afterAll(({}, suite) => recordReliability("security-sockets", rows, suite));

const REQUEST_TIMEOUT_MS = 3000;
const HEADERS_TIMEOUT_MS = 2000;
const PER_KIND = 100;

interface Slow {
  kind: string;
  socket: Socket;
  openedAt: number;
  closedAt: number | null;
  reply: string;
}

/** A socket that sends `head` at once and then one byte of `drip` every 200 ms, for as long as the server lets it. */
function slowClient(port: number, kind: string, head: string, drip: string): Slow {
  const s: Slow = { kind, socket: connect({ host: "127.0.0.1", port }), openedAt: Date.now(), closedAt: null, reply: "" };
  s.socket.setNoDelay(true);
  s.socket.on("error", () => undefined);
  s.socket.on("data", (d) => void (s.reply += d.toString("latin1").slice(0, 200)));
  s.socket.on("close", () => void (s.closedAt = Date.now()));
  s.socket.write(head);
  let i = 0;
  const timer = setInterval(() => {
    if (s.closedAt !== null || s.socket.destroyed) return clearInterval(timer);
    s.socket.write(drip[i++ % drip.length]!);
  }, 200);
  timer.unref();
  return s;
}

describe("slow clients cannot hold sockets", () => {
  it(`${3 * PER_KIND} sockets sending headers or bodies slowly (with and without a key) are closed within the request timeout while /healthz keeps answering`, async () => {
    // A key budget large enough that every keyed socket gets as far as its body.
    const t = await startTestServer({ env: { MEDMMV_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), MEDMMV_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), MEDMMV_RATE_LIMIT_PER_MIN: "100000" } });
    const clients: Slow[] = [];
    try {
      const port = Number(new URL(t.base).port);
      const body = (auth: string) => `POST /diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n${auth}\r\n{"question":"`;
      for (let i = 0; i < PER_KIND; i++) {
        clients.push(slowClient(port, "slow headers", "POST /diagnose HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-Slow: a\r\n"));
        clients.push(slowClient(port, "slow body, no key", body(""), "a"));
        clients.push(slowClient(port, "slow body, valid key", body(`Authorization: Bearer ${KEY_A}\r\n`), "a"));
      }
      const started = Date.now();
      // The event loop stays free: probes answer while the slow sockets are held and cut off.
      const probeMs: number[] = [];
      while (clients.some((c) => c.closedAt === null) && Date.now() - started < 30_000) {
        const t0 = Date.now();
        const res = await fetch(`${t.base}/healthz`);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        probeMs.push(Date.now() - t0);
        await new Promise((r) => setTimeout(r, 100));
      }
      const open = clients.filter((c) => c.closedAt === null);
      expect(open.length, "sockets still open after 30 s").toBe(0);
      // Node checks the two timeouts once a second (connectionsCheckingInterval): a socket lives at
      // most the timeout plus that interval, plus what a loaded machine adds to both.
      const limitMs = REQUEST_TIMEOUT_MS + 1000 + 5000;
      const held = clients.map((c) => c.closedAt! - c.openedAt);
      const worst = Math.max(...held);
      expect(worst).toBeLessThan(limitMs);
      expect(probeMs.length).toBeGreaterThan(3);
      const byKind = (kind: string) => Math.max(...clients.filter((c) => c.kind === kind).map((c) => c.closedAt! - c.openedAt));
      const keyed = clients.filter((c) => c.kind === "slow body, valid key");
      // A keyed slow body reaches the body parser and is cut off there: 408, then the socket closes.
      expect(keyed.every((c) => /^HTTP\/1\.1 408 /.test(c.reply))).toBe(true);
      rows.push({
        suite: "security",
        scenario: `${clients.length} sockets on loopback: slow headers, slow bodies without a key, slow bodies with a valid key (request timeout ${REQUEST_TIMEOUT_MS} ms, headers ${HEADERS_TIMEOUT_MS} ms)`,
        trials: clients.length,
        outcome: `all closed; longest held: slow headers ${byKind("slow headers")} ms, body without key ${byKind("slow body, no key")} ms, body with key ${byKind("slow body, valid key")} ms; /healthz answered ${probeMs.length} probes meanwhile, slowest ${Math.max(...probeMs)} ms`,
        itemsLost: 0,
      });
    } finally {
      for (const c of clients) c.socket.destroy();
      await t.close();
    }
  });
});

describe("one key cannot hold unbounded event streams", () => {
  it("past MEDMMV_MAX_EVENT_STREAMS_PER_KEY a key's next stream is a 429; closing one frees its place", async () => {
    const MAX = 3;
    // The rollouts are held back, so the case stays running and its streams stay open.
    const t = await startTestServer({ scenario: withDelays(clinicalScenario({ rolloutAnswers: ["B"] }), { rollout: 120_000 }), env: { MEDMMV_MAX_EVENT_STREAMS_PER_KEY: String(MAX) } });
    const streams: AbortController[] = [];
    try {
      const accepted = await t.api("/diagnose", { method: "POST", json: chestPain(), headers: { prefer: "respond-async" } });
      expect(accepted.status).toBe(202);
      const { caseId } = await json<{ caseId: string }>(accepted);
      const open = async (): Promise<number> => {
        const ctrl = new AbortController();
        const res = await t.api(`/cases/${caseId}/events`, { signal: ctrl.signal });
        if (res.status === 200) streams.push(ctrl);
        else await res.arrayBuffer();
        return res.status;
      };
      const statuses: number[] = [];
      for (let i = 0; i < MAX + 3; i++) statuses.push(await open());
      expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
      // The live audit page serves the same stream at another path: it counts against the same cap.
      const page = new AbortController();
      const viaPage = await t.api(`/cases/${caseId}/view/events`, { signal: page.signal });
      if (viaPage.status === 200) streams.push(page);
      else await viaPage.arrayBuffer();
      expect(viaPage.status).toBe(429);
      streams.shift()!.abort();
      const reopened = await until(async () => ((await open()) === 200 ? true : undefined), 10_000, "a stream place to be freed");
      expect(reopened).toBe(true);
      expect((await t.api(`/cases/${caseId}`, { method: "DELETE" })).status).toBe(204);
      rows.push({ suite: "security", scenario: `${MAX + 3} event streams of one key on one running case, cap ${MAX}`, trials: MAX + 4, outcome: `${statuses.join(", ")}; after one closed, a new one 200`, itemsLost: 0 });
    } finally {
      for (const s of streams) s.abort();
      await t.close();
    }
  });
});
