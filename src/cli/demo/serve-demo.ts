import { createHash, randomBytes } from "node:crypto";
import { readFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { loadConfig } from "../../core/config.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import { loadCaseFile } from "../../core/intake/load-case.js";
import { intakeSettings, type IntakeSettings } from "../../core/intake/intake-settings.js";
import { ApiKeys } from "../../server/http/auth.js";
import { isLoopback, startServer, type RunningServer, type StartServerOptions } from "../../server/server.js";
import { openStore } from "../../server/store/open-store.js";
import { DEMO_ISOLATION_ENV, DEMO_MODEL, startDemoBackends } from "./demo-backends.js";
import { DEMO_CASES } from "./demo-cases.js";
import { askDemoQuestions, describeTurns, type DemoTurn } from "./demo-turns.js";

export type DemoServiceOptions = StartServerOptions;

export interface DemoCaseLink {
  slug: string;
  caseId: string;
  status: string;
  /** Absolute URL of the signed audit-view link. */
  viewUrl: string;
  /** The scripted conversation posted on the case (empty for cases without questions). */
  turns: DemoTurn[];
}

export interface RunningDemo {
  server: RunningServer;
  apiKey: string;
  docsUrl: string;
  cases: DemoCaseLink[];
  close(): Promise<void>;
}

const LINK_TTL_SEC = 24 * 3600;
const KEY_FILE = "demo-api-key";

/**
 * The demo's API key: generated at its first start and kept beside its store, so cases
 * and links of an earlier demo run stay reachable, and every case in the store is the
 * demo's own (owned by this key) — which is how the start-up check tells them apart.
 */
async function demoApiKey(dir: string): Promise<string> {
  const file = path.join(dir, KEY_FILE);
  const known = await readFile(file, "utf8").then(
    (s) => s.trim(),
    () => "",
  );
  if (known.length >= 24) return known;
  const key = `demo-${randomBytes(24).toString("base64url")}`;
  await mkdir(dir, { recursive: true });
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** The example file as a POST /diagnose body: image paths replaced by their bytes, every other field as written. */
async function requestBody(file: string, settings: IntakeSettings): Promise<Record<string, unknown>> {
  const raw = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  const loaded = await loadCaseFile(file, settings);
  const byId = new Map(loaded.images.map((i) => [i.id, i]));
  const images = Array.isArray(raw.images)
    ? raw.images.map((img: { id: string; caption?: string }) => {
        const l = byId.get(img.id)!;
        return { id: l.id, mimeType: l.mimeType, data: l.data, ...(img.caption !== undefined ? { caption: img.caption } : {}) };
      })
    : undefined;
  return { ...raw, ...(images ? { images } : {}) };
}

/**
 * `medmmv serve --demo`: the real service — REST API, event stream, audit view, docs — on
 * loopback only, backed by the scripted model and search servers started in this process.
 * The bundled example cases are submitted over HTTP at start (idempotently: a restart finds
 * them in the store); the returned links are signed audit-view links for each.
 * Refuses a non-loopback HOST (scripted answers are not a service for others) and a store
 * holding cases that are not the demo's (they would mix with, or be resumed by, the script).
 */
export async function startDemoService(env: Record<string, string | undefined>, opts: DemoServiceOptions = {}): Promise<RunningDemo> {
  const base = loadConfig({ ...env, ...DEMO_ISOLATION_ENV });
  if (!isLoopback(base.http.host)) {
    throw new MedmmvError(
      "CONFIG_INVALID",
      `serve --demo listens on loopback only, and HOST=${base.http.host} is not a loopback address: unset HOST or set HOST=127.0.0.1 (the demo's answers are scripted; it is not a service for other machines)`,
    );
  }
  // Its own SQLite file by default, so a later real `medmmv serve` never meets scripted cases.
  const dataDir = base.store.databaseUrl ? base.store.dataDir : path.join(base.store.dataDir, "demo");
  const apiKey = await demoApiKey(path.join(base.store.dataDir, "demo"));
  const owner = new ApiKeys([apiKey]).verify(apiKey)!;
  const where = base.store.databaseUrl ? "the PostgreSQL store at DATABASE_URL" : `the store in ${path.resolve(dataDir)}`;
  const probe = await openStore({ databaseUrl: base.store.databaseUrl, dataDir }, opts.storeOptions);
  try {
    const others = await probe.countCasesNotOwnedBy(owner);
    if (others > 0)
      throw new MedmmvError(
        "CONFLICT",
        `refusing to start the demo on ${where}: it holds ${others} case${others === 1 ? "" : "s"} that the demo did not create, which the scripted model must not touch. Point the demo at a store of its own: unset DATABASE_URL, or set MEDMMV_DATA_DIR to an empty directory`,
      );
  } finally {
    await probe.close();
  }

  const backends = await startDemoBackends();
  let server: RunningServer | null = null;
  try {
    const config = loadConfig({
      ...env,
      ...backends.env,
      MEDMMV_DATA_DIR: dataDir,
      MEDMMV_API_KEYS: apiKey,
      MEDMMV_WORKERS: "1",
      // Request logs would bury the links this command prints; MEDMMV_LOG_LEVEL=info brings them back.
      MEDMMV_LOG_LEVEL: env.MEDMMV_LOG_LEVEL || "warn",
      MEDMMV_VIEW_LINK_SECRET: env.MEDMMV_VIEW_LINK_SECRET || randomBytes(32).toString("base64url"),
    });
    server = await startServer(config, opts);
    const address = server.address;
    const api = async <T>(p: string, init: RequestInit & { json?: unknown } = {}): Promise<T> => {
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${apiKey}`);
      if (init.json !== undefined) headers.set("content-type", "application/json");
      const res = await fetch(address + p, { ...init, headers, body: init.json === undefined ? init.body : JSON.stringify(init.json) });
      const body = (await res.json()) as T & { code?: string; message?: string; details?: { caseId?: string } };
      // A restart while a demo case still runs: its idempotency key answers 409 with the case id.
      if (res.status === 409 && body.details?.caseId) return { caseId: body.details.caseId } as T;
      if (res.status >= 400) throw new MedmmvError("INTERNAL", `the demo service answered ${res.status} to ${p}: ${body.code ?? ""} ${body.message ?? ""}`.trim());
      return body;
    };

    const submitted: Array<{ slug: string; caseId: string; questions?: readonly string[] }> = [];
    for (const demo of DEMO_CASES) {
      const body = await requestBody(demo.file, intakeSettings(config));
      // Same example, same key: a restart finds the stored case; an edited example is a new case.
      const digest = createHash("sha256").update(JSON.stringify(body)).digest("hex").slice(0, 16);
      const accepted = await api<{ caseId: string }>("/diagnose", {
        method: "POST",
        json: body,
        headers: { prefer: "respond-async", "idempotency-key": `medmmv-demo-${demo.slug}-${digest}` },
      });
      submitted.push({ slug: demo.slug, caseId: accepted.caseId, ...(demo.questions ? { questions: demo.questions } : {}) });
    }
    const cases: DemoCaseLink[] = [];
    for (const s of submitted) {
      const record = await server.service.wait(s.caseId);
      // Turns are asked of a finished case only (the endpoint answers 409 otherwise).
      const turns = s.questions && record?.status === "completed" ? await askDemoQuestions(api, s.caseId, s.questions) : [];
      const link = await api<{ url: string }>(`/cases/${encodeURIComponent(s.caseId)}/view-links`, { method: "POST", json: { ttlSec: LINK_TTL_SEC } });
      cases.push({ slug: s.slug, caseId: s.caseId, status: record?.status ?? "unknown", viewUrl: address + link.url, turns });
    }
    const running = server;
    return {
      server: running,
      apiKey,
      docsUrl: `${address}/docs`,
      cases,
      close: async () => {
        await running.close();
        await backends.close();
      },
    };
  } catch (err) {
    await server?.close().catch(() => undefined);
    await backends.close().catch(() => undefined);
    throw err;
  }
}

/** What `medmmv serve --demo` prints once the demo cases are done. */
export function describeDemo(d: RunningDemo): string {
  return [
    "medmmv serve --demo — the real service with a SCRIPTED model (answers written in advance for the bundled cases).",
    `It listens on loopback only. Every result says \`${DEMO_MODEL}\` in provenance.models, and its audit view says so.`,
    "",
    `API docs (try the endpoints in the browser): ${d.docsUrl}`,
    `API key (generated for this demo):         ${d.apiKey}`,
    "",
    ...d.cases.flatMap((c) => [
      `Audit view of ${c.slug} (${c.caseId}, ${c.status}; signed link, valid 24 h):`,
      `  ${c.viewUrl}`,
      ...(c.turns.length ? [`  Conversation on it (scripted; other questions to POST /cases/${c.caseId}/turns get a "not scripted" reply):`, ...describeTurns(c.turns)] : []),
    ]),
    "",
    "Try:",
    `  curl -s ${d.server.address}/cases -H "Authorization: Bearer ${d.apiKey}"`,
    `  curl -N ${d.server.address}/cases/${d.cases[0]?.caseId ?? "ID"}/events -H "Authorization: Bearer ${d.apiKey}"`,
    "Ctrl-C stops it. With a live model instead: OPENAI_BASE_URL=…/v1 MEDMMV_MODEL=… MEDMMV_API_KEYS=… npx medmmv serve",
    "",
  ].join("\n");
}
