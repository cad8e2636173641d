import { expect } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { startServer, type RunningServer } from "../../../src/server/server.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI, type Scenario, type ScriptedOpenAI, type ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import type { ClinicalCase } from "../../../src/core/contracts/clinical-case.js";
import type { Config } from "../../../src/core/config.js";
import type { OpenStoreOptions } from "../../../src/server/store/open-store.js";

export const KEY_A = "test-key-alpha-0123456789abcdefghij";
export const KEY_B = "test-key-bravo-9876543210abcdefghij";

/** Every log line the server wrote, as text (for the no-patient-data checks). */
export class LogCapture extends Writable {
  readonly chunks: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(chunk.toString("utf8"));
    cb();
  }
  text(): string {
    return this.chunks.join("");
  }
  lines(): Record<string, unknown>[] {
    return this.text()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

export interface TestServer {
  base: string;
  server: RunningServer;
  openai: ScriptedOpenAI;
  logs: LogCapture;
  dataDir: string;
  /** fetch against the server with KEY_A unless `key` says otherwise (null: no header). */
  api(p: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  scenario?: Scenario;
  heartbeatMs?: number;
  /** Reuse a data directory (restart tests). */
  dataDir?: string;
  openai?: ScriptedOpenAI;
  storeOptions?: OpenStoreOptions;
}

/** What both harnesses start from: the scripted model server, a data directory, a log capture and the test config. */
export async function harnessSetup(o: TestServerOptions, tmpPrefix: string): Promise<{ openai: ScriptedOpenAI; dataDir: string; logs: LogCapture; config: Config }> {
  const openai = o.openai ?? (await startScriptedOpenAI({ scenario: o.scenario ?? clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }) }));
  const dataDir = o.dataDir ?? (await mkdtemp(path.join(tmpdir(), tmpPrefix)));
  const logs = new LogCapture();
  const config = scriptedConfig(openai.baseUrl, {
    MEDMMV_DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: "0",
    MEDMMV_API_KEYS: `${KEY_A},${KEY_B}`,
    MEDMMV_K: "3",
    MEDMMV_MAX_REPAIRS: "1",
    MEDMMV_LOG_LEVEL: "debug",
    MEDMMV_CACHE: "deterministic",
    ...o.env,
  });
  return { openai, dataDir, logs, config };
}

/** A real server on a random port, with SQLite in a temp dir and the scripted clinician behind it. */
export async function startTestServer(o: TestServerOptions = {}): Promise<TestServer> {
  const { openai, dataDir, logs, config } = await harnessSetup(o, "medmmv-http-");
  const server = await startServer(config, { logStream: logs, heartbeatMs: o.heartbeatMs ?? 15_000, handleSignals: false, storeOptions: o.storeOptions });
  const base = server.address;
  const api: TestServer["api"] = (p, init = {}) => {
    const { key = KEY_A, json, headers, ...rest } = init;
    const h = new Headers(headers);
    if (key !== null) h.set("authorization", `Bearer ${key}`);
    let body = rest.body;
    if (json !== undefined) {
      h.set("content-type", "application/json");
      body = JSON.stringify(json);
    }
    return fetch(base + p, { ...rest, headers: h, body });
  };
  return {
    base,
    server,
    openai,
    logs,
    dataDir,
    api,
    async close() {
      await server.close();
      if (!o.openai) await openai.close();
      if (!o.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Our own example case (not a benchmark item). */
export function chestPain(overrides: Partial<ClinicalCase> = {}): ClinicalCase {
  return {
    question: "What is the most likely diagnosis?",
    notes:
      "A 58-year-old man presents with crushing substernal chest pain radiating to the left arm for 40 minutes. He is diaphoretic and nauseated. ECG shows ST elevation in leads II, III and aVF. Troponin I is 2.4 ng/mL.",
    options: { A: "Acute pericarditis", B: "Inferior ST-elevation myocardial infarction", C: "Aortic dissection" },
    patient: { age: 58, sex: "male" },
    ...overrides,
  };
}

export { until } from "../../support/until.js";


/** Read an SSE response to the end (or until `stopAfter` events), returning parsed events and raw text. */
export async function readSse(res: Response, opts: { stopAfter?: number; timeoutMs?: number } = {}): Promise<{ events: { id: number; event: string; data: Record<string, unknown> }[]; raw: string }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let raw = "";
  const events: { id: number; event: string; data: Record<string, unknown> }[] = [];
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
  let parsedUpTo = 0;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) {
      await reader.cancel();
      throw new Error(`SSE read timed out; got: ${raw.slice(0, 2000)}`);
    }
    const chunk = await Promise.race([reader.read(), new Promise<"timeout">((r) => setTimeout(() => r("timeout"), left))]);
    if (chunk === "timeout") continue;
    if (chunk.done) break;
    raw += decoder.decode(chunk.value, { stream: true });
    const blocks = raw.slice(parsedUpTo).split("\n\n");
    blocks.pop();
    for (const b of blocks) {
      parsedUpTo += b.length + 2;
      const fields = Object.fromEntries(
        b
          .split("\n")
          .filter((l) => l && !l.startsWith(":"))
          .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trimStart()]),
      );
      if (fields.event && fields.data) events.push({ id: Number(fields.id ?? NaN), event: fields.event, data: JSON.parse(fields.data) as Record<string, unknown> });
    }
    if (opts.stopAfter !== undefined && events.length >= opts.stopAfter) {
      await reader.cancel();
      break;
    }
  }
  return { events, raw };
}

/** Hold replies of some agents back (ms, or a function of the request), e.g. to keep a case mid-flight. */
export function withDelays(scenario: Scenario, delays: Record<string, number | ((req: ScriptedRequest) => number)>): Scenario {
  const agents: Scenario["agents"] = { ...scenario.agents };
  for (const [agent, delay] of Object.entries(delays)) {
    const original = scenario.agents[agent];
    agents[agent] = async (req: ScriptedRequest) => {
      const ms = typeof delay === "function" ? delay(req) : delay;
      if (ms > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ms);
          req.signal.addEventListener("abort", () => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      let step: unknown = original;
      if (Array.isArray(step)) step = step[req.callIndex % step.length];
      return typeof step === "function" ? (step as (r: ScriptedRequest) => unknown)(req) : step;
    };
  }
  return { ...scenario, agents };
}

/** The audit-view tests' server env and their one finished case (created through `api`, socket or inject). */
export const VIEW_ENV = { MEDMMV_VIEW_LINK_SECRET: "a-test-secret-of-enough-length-0123456789" };
export async function diagnosedCaseId(t: Pick<TestServer, "api">): Promise<string> {
  const res = await t.api("/diagnose", { method: "POST", json: chestPain() });
  expect(res.status).toBe(201);
  return ((await res.json()) as { caseId: string }).caseId;
}

export async function json<T = Record<string, unknown>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}
