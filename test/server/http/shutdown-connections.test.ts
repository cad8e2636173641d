import net from "node:net";
import { describe, expect, it } from "vitest";
import { startTestServer } from "./http-harness.js";

/**
 * A graceful stop must not wait on connections that carry no request. A browser that has
 * opened an audit view keeps speculative, never-used connections to the origin; to Node
 * they are not "idle", and before connection-drain.ts `close()` waited on them for as long
 * as the browser kept them (here: forever, since the test's socket never goes away).
 */
describe("graceful stop and open connections", () => {
  it("ends a connection that never sent a request, and one idle after its request, and finishes", async () => {
    const t = await startTestServer();
    const { hostname, port } = new URL(t.base);
    const preconnect = net.connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => preconnect.once("connect", resolve).once("error", reject));
    const ended = new Promise<void>((resolve) => preconnect.once("close", () => resolve()));
    // A keep-alive connection that did carry a request (the harness's fetch pool keeps it).
    expect((await t.api("/healthz", { key: null })).status).toBe(200);

    await t.close();
    await ended;
    expect(preconnect.destroyed).toBe(true);
  });
});
