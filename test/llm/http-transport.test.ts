import http from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpStatusError, MAX_REPLY_BYTES, ReplyNotJsonError, httpRequest, postJson } from "../../src/llm/http-transport.js";

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
      } else if (req.url === "/not-json") {
        res.writeHead(200, { "content-type": "text/html" });
        res.end("<html>proxy error</html>");
      } else if (req.url === "/huge") {
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(1024 * 1024, 32);
        let sent = 0;
        const pump = () => {
          while (sent < MAX_REPLY_BYTES + 2 * chunk.length && !res.destroyed) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
          res.end();
        };
        pump();
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

describe("http transport (the model and search clients' HTTP)", () => {
  it("posts a JSON body with its headers and content-length, and parses the JSON reply", async () => {
    await expect(postJson(`${base}/echo`, { a: 1 }, { headers: { authorization: "Bearer k" } })).resolves.toEqual({ got: { a: 1 } });
    const req = seen.at(-1)!;
    expect(req.method).toBe("POST");
    expect(req.headers.authorization).toBe("Bearer k");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["content-length"]).toBe(String(Buffer.byteLength(JSON.stringify({ a: 1 }))));
  });

  it("counts content-length in bytes, not characters", async () => {
    const text = "Lésion — 5 mm ✓";
    await expect(postJson(`${base}/echo`, { text }, {})).resolves.toEqual({ got: { text } });
    expect(seen.at(-1)!.headers["content-length"]).toBe(String(Buffer.byteLength(JSON.stringify({ text }))));
  });

  it("decodes a gzip body", async () => {
    const reply = await httpRequest(`${base}/gzip`, { method: "GET" });
    expect(JSON.parse(reply.body.toString())).toEqual({ compressed: true });
  });

  it("turns an error status into HttpStatusError with the status, the headers and the provider's message", async () => {
    const err = await postJson(`${base}/limited`, {}, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpStatusError);
    expect((err as HttpStatusError).status).toBe(429);
    expect((err as HttpStatusError).headers["retry-after"]).toBe("3");
    expect((err as Error).message).toBe("HTTP 429: slow down");
  });

  it("a 2xx body that is not JSON is ReplyNotJsonError, with no status (the retry layer treats it as transient)", async () => {
    const err = await postJson(`${base}/not-json`, {}, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplyNotJsonError);
    expect((err as Error).message).toBe("HTTP 200 reply is not JSON (text/html, 24 bytes)");
    expect((err as { status?: unknown }).status).toBeUndefined();
  });

  it("returns an empty body for 204", async () => {
    const reply = await httpRequest(`${base}/empty`, { method: "DELETE" });
    expect(reply.status).toBe(204);
    expect(reply.body.length).toBe(0);
  });

  it("follows a 307 redirect with the same method and body", async () => {
    await expect(postJson(`${base}/moved`, { r: true }, {})).resolves.toEqual({ got: { r: true } });
    expect(seen.at(-1)!.url).toBe("/echo");
    expect(seen.at(-1)!.method).toBe("POST");
  });

  it("refuses a reply larger than the cap instead of buffering it", async () => {
    const err = await httpRequest(`${base}/huge`, { method: "GET" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpStatusError);
    expect((err as Error).message).toMatch(/larger than/);
  });

  it("rejects with the abort reason when the signal aborts mid-request, and at once when already aborted", async () => {
    const ctrl = new AbortController();
    const started = Date.now();
    setTimeout(() => ctrl.abort(), 30);
    const err = await httpRequest(`${base}/slow`, { method: "GET", signal: ctrl.signal }).catch((e: unknown) => e);
    expect((err as Error).name).toBe("AbortError");
    expect(Date.now() - started).toBeLessThan(1_500);
    const pre = new AbortController();
    pre.abort();
    await expect(httpRequest(`${base}/echo`, { method: "GET", signal: pre.signal })).rejects.toMatchObject({ name: "AbortError" });
  });

  it("rejects on a connection error (not an HTTP status) and on a protocol it does not speak", async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await httpRequest(`http://127.0.0.1:${port}/x`, { method: "GET" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
    await expect(httpRequest("ftp://127.0.0.1/x", { method: "GET" })).rejects.toThrow(/unsupported protocol/);
  });
});
