import http from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpFetch } from "../../src/llm/http-fetch.js";

/** A tiny server whose routes show what the client sent and exercise the reply paths. */
let server: http.Server;
let base: string;
const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      if (req.url === "/echo") {
        res.writeHead(200, { "content-type": "application/json", "x-multi": ["a", "b"] });
        res.end(JSON.stringify({ got: JSON.parse(body || "null") }));
      } else if (req.url === "/gzip") {
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
        res.end(gzipSync(JSON.stringify({ compressed: true })));
      } else if (req.url === "/limited") {
        res.writeHead(429, { "retry-after": "3", "content-type": "application/json" });
        res.end('{"error":{"message":"slow down"}}');
      } else if (req.url === "/empty") {
        res.writeHead(204);
        res.end();
      } else if (req.url === "/moved") {
        res.writeHead(307, { location: "/echo" });
        res.end();
      } else if (req.url === "/slow") {
        setTimeout(() => {
          if (!res.destroyed) res.end("{}");
        }, 2_000);
      } else {
        res.writeHead(404);
        res.end("no");
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe("httpFetch (the model client's transport)", () => {
  it("sends method, headers and a JSON body, and returns a standard Response", async () => {
    const res = await httpFetch(`${base}/echo`, { method: "POST", headers: new Headers({ "Content-Type": "application/json", Authorization: "Bearer k" }), body: JSON.stringify({ a: 1 }) });
    expect(res).toBeInstanceOf(Response);
    expect(res.status).toBe(200);
    expect(res.ok).toBe(true);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("x-multi")).toBe("a, b");
    expect(await res.json()).toEqual({ got: { a: 1 } });
    const req = seen.at(-1)!;
    expect(req.method).toBe("POST");
    expect(req.headers.authorization).toBe("Bearer k");
    expect(req.headers["content-length"]).toBe(String(Buffer.byteLength(JSON.stringify({ a: 1 }))));
  });

  it("accepts headers as a plain record and a byte body", async () => {
    const res = await httpFetch(`${base}/echo`, { method: "POST", headers: { "X-Test": "1" }, body: new TextEncoder().encode('"bytes"') });
    expect(await res.json()).toEqual({ got: "bytes" });
    expect(seen.at(-1)!.headers["x-test"]).toBe("1");
  });

  it("decodes a gzip body and drops the encoding header", async () => {
    const res = await httpFetch(`${base}/gzip`, { method: "GET" });
    expect(await res.json()).toEqual({ compressed: true });
    expect(res.headers.get("content-encoding")).toBeNull();
  });

  it("passes error statuses and their headers through (the retry layer reads them)", async () => {
    const res = await httpFetch(`${base}/limited`, { method: "POST", body: "{}" });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("3");
    expect(await res.json()).toEqual({ error: { message: "slow down" } });
  });

  it("returns a null body for 204", async () => {
    const res = await httpFetch(`${base}/empty`, { method: "DELETE" });
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it("follows a redirect (through the built-in fetch)", async () => {
    const res = await httpFetch(`${base}/moved`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"r":true}' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ got: { r: true } });
  });

  it("rejects with an AbortError when the signal aborts mid-request, and at once when already aborted", async () => {
    const ctrl = new AbortController();
    const started = Date.now();
    setTimeout(() => ctrl.abort(), 30);
    const err = await httpFetch(`${base}/slow`, { method: "GET", signal: ctrl.signal }).catch((e: unknown) => e);
    expect((err as Error).name).toBe("AbortError");
    expect(Date.now() - started).toBeLessThan(1_500);
    const pre = new AbortController();
    pre.abort();
    await expect(httpFetch(`${base}/echo`, { method: "GET", signal: pre.signal })).rejects.toMatchObject({ name: "AbortError" });
  });

  it("rejects on a connection error (not an HTTP status)", async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await httpFetch(`http://127.0.0.1:${port}/x`, { method: "GET" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
  });
});
