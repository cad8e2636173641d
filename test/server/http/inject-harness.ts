import { rm } from "node:fs/promises";
import type { FastifyInstance } from "fastify";
import { assertLlmConfigured } from "../../../src/core/config.js";
import { createLogger } from "../../../src/server/http/logger.js";
import { CaseService } from "../../../src/server/service/case-service.js";
import type { CaseStore } from "../../../src/server/store/case-store.js";
import { openStore } from "../../../src/server/store/open-store.js";
import { buildServerApp } from "../../../src/server/server.js";
import type { ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { harnessSetup, KEY_A, type LogCapture, type TestServerOptions } from "./http-harness.js";

/** What one injected request answered: the status, headers, raw text and the body parsed when it is JSON. */
export interface InjectReply {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
  /** The bytes as sent (images, HTML). */
  raw: Buffer;
}

export interface InjectRequest {
  method?: string;
  url: string;
  headers?: Record<string, string>;
  /** Sent as application/json. */
  json?: unknown;
  /** A raw body: a string, bytes, or FormData (encoded as multipart/form-data the way fetch does). */
  payload?: string | Buffer | FormData;
  /** KEY_A unless given; null sends no authorization header. */
  key?: string | null;
}

export interface InjectServer {
  /** Where requests appear to come from; the scripted clients build absolute URLs from it. */
  base: string;
  app: FastifyInstance;
  service: CaseService;
  store: CaseStore;
  /** Kept so tests written against TestServer read `t.server.store` (and stop the app alone with `t.server.close()`) unchanged. */
  server: { app: FastifyInstance; service: CaseService; store: CaseStore; close(): Promise<void> };
  openai: ScriptedOpenAI;
  logs: LogCapture;
  dataDir: string;
  request(r: InjectRequest): Promise<InjectReply>;
  /**
   * The same call shape as TestServer.api (fetch init plus `key` and `json`), answered through
   * app.inject and handed back as a fetch Response, so a moved test keeps its expectations verbatim.
   */
  api(p: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

// Sent as the Host of every injected request (nothing listens there), with a port so the origin keeps it,
// as a real port's would: routes that build absolute links from Host then match `base`.
const INJECT_BASE = "http://inject.invalid:8080";
// Statuses a fetch Response may not carry a body with.
const NULL_BODY = new Set([101, 204, 205, 304]);

function plain(h: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  h.forEach((v, k) => (out[k] = v));
  return out;
}

/**
 * The app startServer builds (same store, pipeline, service, Fastify options and plugin), never listening:
 * requests go through app.inject. The scripted model server keeps its real loopback port, since the
 * product's own HTTP client calls it. buildServerApp is the same build startServer listens on.
 */
export async function startInjectServer(o: TestServerOptions = {}): Promise<InjectServer> {
  const { openai, dataDir, logs, config } = await harnessSetup(o, "medmmv-inject-");
  const logger = createLogger(config.logLevel, logs);
  const store = await openStore(config.store, o.storeOptions);
  const { app, service } = await buildServerApp(config, store, logger, { storeOptions: o.storeOptions, heartbeatMs: o.heartbeatMs ?? 15_000 });
  await app.ready();
  let llmReady = true;
  try {
    assertLlmConfigured(config);
  } catch {
    llmReady = false;
  }
  if (llmReady) service.start();

  const request = async (r: InjectRequest): Promise<InjectReply> => {
    const { key = KEY_A, json: body, payload, headers = {}, method = "GET", url } = r;
    // A Request does the encoding fetch would (FormData boundary, content-type), so the bytes match a socket test's.
    const init: RequestInit = { method, headers: new Headers(headers) };
    const h = init.headers as Headers;
    if (key !== null) h.set("authorization", `Bearer ${key}`);
    if (body !== undefined) {
      h.set("content-type", "application/json");
      init.body = JSON.stringify(body);
    } else if (payload !== undefined) {
      init.body = payload as BodyInit;
    }
    const encoded = new Request(INJECT_BASE + url, init);
    const bytes = init.body === undefined ? undefined : Buffer.from(await encoded.arrayBuffer());
    const res = await app.inject({ method: method as "GET", url, headers: { host: new URL(INJECT_BASE).host, ...plain(encoded.headers) }, ...(bytes ? { payload: bytes } : {}) });
    const out = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) out.append(name, String(v));
    }
    let parsed: unknown = undefined;
    if (/json/.test(out.get("content-type") ?? "") && res.payload) {
      try {
        parsed = JSON.parse(res.payload);
      } catch {
        parsed = undefined;
      }
    }
    return { status: res.statusCode, headers: out, text: res.payload, body: parsed, raw: res.rawPayload };
  };

  const api: InjectServer["api"] = async (p, init = {}) => {
    const { key, json: body, headers, method, body: raw } = init;
    const reply = await request({ url: p, method, key, json: body, headers: plain(new Headers(headers)), payload: raw as InjectRequest["payload"] });
    return new Response(NULL_BODY.has(reply.status) ? null : new Uint8Array(reply.raw), { status: reply.status, headers: reply.headers });
  };

  return {
    base: INJECT_BASE,
    app,
    service,
    store,
    server: { app, service, store, close: () => app.close() },
    openai,
    logs,
    dataDir,
    request,
    api,
    async close() {
      await app.close();
      if (!o.openai) await openai.close();
      if (!o.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
