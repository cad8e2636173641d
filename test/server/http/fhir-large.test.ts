// A real socket: the point is what other requests see while one large bundle is read.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./http-harness.js";
import { largeBundleText } from "../../core/intake/fhir/large-record.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

describe("a 25 MiB FHIR bundle does not stall the server", () => {
  it("/healthz keeps answering while the bundle is read", async () => {
    const body = largeBundleText(24 * 1024 * 1024);
    expect(body.length).toBeGreaterThan(24 * 1024 * 1024);
    let settled = false;
    const post = t
      .api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json", prefer: "respond-async" }, body })
      .finally(() => (settled = true));
    // Probes one after another: each must be answered before the next is sent. Were the
    // intake one block on the event loop, they would all wait for it and few would get in.
    let answeredDuring = 0;
    while (!settled) {
      const res = await t.api("/healthz", { key: null });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      if (!settled) answeredDuring++;
    }
    const res = await post;
    expect(res.status).toBe(202);
    // While the body uploads a few get in either way (7 here with a blocking intake); while it is read, dozens (55 here).
    expect(answeredDuring).toBeGreaterThanOrEqual(20);
  }, 120_000);
});
