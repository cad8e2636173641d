import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";
import type { ClinicalCase } from "../../src/core/contracts/clinical-case.js";
import type { EvalSummary } from "../../src/eval/summary.js";
import { SqliteStore } from "../../src/server/store/sqlite-store.js";
import { SQLITE_FILE_NAME } from "../../src/core/database/database-names.js";
import { TERMINAL_STATUSES, type CaseStatus } from "../../src/server/store/case-store.js";
import { sharedBundle, spawnBundle, startBundledServer, type Bundle } from "../support/bundled-process.js";
import { caseBlock, clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { createPrng, nowMs } from "../../src/scripted/faults.js";
import { recordReliability, type ReliabilityRow } from "../support/reliability-recorder.js";
import { span, TrialLog } from "../support/trial-log.js";
import { startScriptedOpenAI, type Scenario, type ScriptedCallLog, type ScriptedOpenAI, type ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";
import { answerByItem, evalScenario, keyOfCaseText, readItems } from "../eval/eval-fixtures.js";
import { chestPain } from "../server/http/http-harness.js";
import { pngWithCanvas } from "../../src/scripted/image-bytes.js";
import { childServerEnv, keyedFetch, submitAsync, waitTerminal } from "../support/server-process.js";
import { faultTrials } from "../support/fault-trials.js";

/**
 * kill -9 at random moments, many times: the server with several cases in flight, and
 * `medmmv eval` mid-run. After a restart (or `--resume`) every accepted case / planned
 * item must reach a terminal state exactly once, and work finished before the kill must
 * not be done again — counted at the scripted model server.
 *
 * Trials per kind: test/support/fault-trials.ts (2 in `npm test`, 10 in `npm run reliability`,
 * MEDMMV_FAULT_TRIALS overrides); kill points: MEDMMV_FAULT_SEED.
 */
const TRIALS = faultTrials();
const SEED = Number(process.env.MEDMMV_FAULT_SEED ?? 20_251_130) || 20_251_130;
const KEY = "kill-trials-key-0123456789abcdefghij";

const rows: ReliabilityRow[] = [];
let serverBundle: Bundle;
let cliBundle: Bundle;
const scratch: string[] = [];

beforeAll(async () => {
  [serverBundle, cliBundle] = await Promise.all([sharedBundle("server"), sharedBundle("cli")]);
});
afterAll(async ({}, suite) => {
  recordReliability("kill-trials", rows, suite);
  await Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true })));
});

async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), prefix));
  scratch.push(d);
  return d;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function countBy<T>(xs: readonly T[], key: (x: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
}

/** Which agents had a call open at the scripted server when the kill landed (or that none had). */
function phaseAt(log: readonly ScriptedCallLog[], at: number): string {
  const open = [...new Set(log.filter((c) => c.start <= at && (c.end === null || c.end >= at)).map((c) => c.agent))].sort();
  if (open.length) return `calls open: ${open.join("+")}`;
  return log.some((c) => c.start <= at) ? "between model calls" : "before the first model call";
}

// ---------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------

/** Long enough that model calls, not local work, fill most of a case's time. */
const LATENCY_MS = 150;
/** Path "A" needs a repair, so refinement runs hd → repair → hd: every phase has calls to cut. */
const serverScenario = (): Scenario => clinicalScenario({ rolloutAnswers: ["B", "B", "A"], repairsNeeded: { A: 1 } });

/** Three cases per trial, each text its own (the response cache is content-addressed). */
function trialCases(): ClinicalCase[] {
  return [
    chestPain(),
    chestPain({ question: "Which diagnosis best explains the findings on the film?", images: [{ id: "film", caption: "Chest film", data: pngWithCanvas(64, 64).toString("base64") }] }),
    chestPain({
      question: "What is the most likely cause of this presentation?",
      notes:
        "A 64-year-old woman has had pressure-like chest pain for two hours, with sweating. She has diabetes and takes metformin. ECG shows ST elevation in leads II, III and aVF. Troponin is raised.",
    }),
  ];
}

function serverEnv(openai: ScriptedOpenAI, dataDir: string): Record<string, string> {
  return childServerEnv(
    { openaiBaseUrl: openai.baseUrl, dataDir, apiKey: KEY },
    // The test polls case status; the per-key limit is not what is under test here.
    { MEDMMV_MAX_REPAIRS: "1", MEDMMV_CACHE: "deterministic", MEDMMV_LLM_TIMEOUT_MS: "20000", MEDMMV_RATE_LIMIT_PER_MIN: "100000" },
  );
}

const api = keyedFetch(KEY);

interface StoreCheck {
  unfinished: number;
  finalEvents: Record<string, number>;
  statuses: Record<string, CaseStatus | "missing">;
}

async function inspectStore(dataDir: string, ids: string[]): Promise<StoreCheck> {
  const store = new SqliteStore({ dataDir });
  await store.init();
  try {
    const out: StoreCheck = { unfinished: (await store.listUnfinished()).length, finalEvents: {}, statuses: {} };
    for (const id of ids) {
      out.statuses[id] = (await store.getCase(id))?.status ?? "missing";
      out.finalEvents[id] = (await store.listEvents(id)).filter((e) => e.type === "final").length;
    }
    return out;
  } finally {
    await store.close();
  }
}

/** Which agent wrote a cached reply, by its shape (rollouts, at temperature 0.7, are never cached). */
function agentOfReply(v: Record<string, unknown>): string {
  if ("entities" in v) return "text-doctor";
  if ("coherence" in v) return "coherence-judge";
  if ("hallucinationDetected" in v) return "claims" in v ? "hd-supervisor" : "image-hd";
  if ("findings" in v) return "image-doctor"; // image-revise never runs here: image-hd accepts
  if ("steps" in v) return "auto-repair";
  return "unknown";
}

/**
 * Model calls whose outcome the (dead) server had made durable, per agent: rollout results
 * in the checkpointer's pending writes of an unfinished case, or in the stored result of a
 * finished one (whose checkpoints are pruned when it finishes), and deterministic replies
 * in the response cache. A restart may redo anything else, but none of these.
 */
function durableWork(dataDir: string, ids: string[]): Record<string, number> {
  const db = new Database(path.join(dataDir, SQLITE_FILE_NAME));
  try {
    const out: Record<string, number> = {};
    const hasWrites = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'writes'").get() !== undefined;
    let rollouts = 0;
    for (const id of ids) {
      const row = db.prepare("SELECT result FROM medmmv_cases WHERE id = ?").get(id) as { result: string | null } | undefined;
      if (row?.result) {
        rollouts += (JSON.parse(row.result) as DiagnosisResult).usage.byAgent.rollout?.calls ?? 0;
      } else if (hasWrites) {
        rollouts += (db.prepare("SELECT COUNT(DISTINCT task_id) AS n FROM writes WHERE channel = 'rollouts' AND thread_id = ?").get(id) as { n: number }).n;
      }
    }
    if (rollouts) out.rollout = rollouts;
    for (const row of db.prepare("SELECT value FROM medmmv_response_cache").all() as Array<{ value: string }>) {
      const agent = agentOfReply((JSON.parse(row.value) as { parsed: Record<string, unknown> }).parsed);
      out[agent] = (out[agent] ?? 0) + 1;
    }
    return out;
  } finally {
    db.close();
  }
}

interface Baseline {
  durationMs: number;
  byAgent: Record<string, number>;
  answers: (string | null)[];
  rolloutAnswers: (string | null)[][];
}

/** What one server kill trial measured; recorded (passed or failed) only after its assertions. */
interface ServerTrial {
  phase: string;
  accepted: number;
  /** Accepted cases listed, stored terminal and with exactly one final event. */
  terminalOnce: number;
  /** Completed cases whose answer and rollout answers are the uninterrupted run's. */
  sameAnswers: number;
  answered: number;
  durable: number;
  /** Calls beyond the uninterrupted run's, in all. */
  remade: number;
  /** Calls made again although their outcome was durable at the kill (must be 0). */
  durableRepeated: number;
}

describe("SIGKILL of the server at random points", () => {
  let baseline: Baseline;
  const trials = new TrialLog<ServerTrial>();

  beforeAll(async () => {
    // One uninterrupted run: how long the cases take, and how many calls each agent needs.
    const openai = await startScriptedOpenAI({ scenario: serverScenario(), latencyMs: LATENCY_MS });
    const dir = await tempDir("medmmv-kill-base-");
    const srv = await startBundledServer(serverBundle, serverEnv(openai, dir));
    try {
      const ids = await submitAsync(api, srv.address, trialCases());
      const t0 = Date.now();
      const views = await waitTerminal(api, srv.address, ids, 30_000);
      const results = views.map((v) => DiagnosisResult.parse(v.result));
      expect(results.map((r) => r.status)).toEqual(["completed", "completed", "completed"]);
      baseline = {
        durationMs: Date.now() - t0,
        byAgent: openai.stats().byAgent,
        answers: results.map((r) => r.answer?.option ?? null),
        rolloutAnswers: results.map((r) => r.stability.rolloutAnswers),
      };
      await srv.kill("SIGTERM");
      // The accounting below is complete: after a whole run, every call's outcome is durable.
      expect(durableWork(dir, ids)).toEqual(baseline.byAgent);
    } finally {
      await srv.kill("SIGTERM");
      await openai.close();
    }
  }, 60_000);

  afterAll(() => {
    if (trials.records.length === 0) return;
    const phases = countBy(trials.values("phase"), (p) => p);
    const needed = baseline ? Object.values(baseline.byAgent).reduce((a, b) => a + b, 0) : 0;
    const accepted = trials.sum("accepted");
    rows.push({
      suite: "kill",
      scenario: `server SIGKILL at a random moment, ${trialCases().length} async cases in flight, restart on the same SQLite store`,
      trials: trials.records.length,
      failed: trials.failed,
      outcome: [
        `${trials.passed} of ${trials.records.length} trials passed`,
        `${trials.sum("terminalOnce")} of ${accepted} accepted cases terminal exactly once (one final event)`,
        `${trials.sum("sameAnswers")} with the uninterrupted run's answers`,
        `calls made again although durable at the kill (checkpointed rollout, cached deterministic reply): ${trials.sum("durableRepeated")}`,
        `killed after ${span(trials.values("answered"))} of ${needed} calls answered (durable: ${span(trials.values("durable"))})`,
        `calls made twice because not yet durable: max ${Math.max(0, ...trials.values("remade"))} per trial`,
        `kill phases: ${Object.entries(phases).map(([p, n]) => `${p} ×${n}`).join(", ")}`,
        trials.failures(),
      ]
        .filter(Boolean)
        .join("; "),
      // A trial that threw before checking its cases counts them all as lost.
      itemsLost: accepted - trials.sum("terminalOnce"),
    });
  });

  const rng = createPrng(SEED);
  for (let trial = 1; trial <= TRIALS; trial++) {
    const draw = rng();
    it(`trial ${trial}: kill -9, restart, every case finishes once without repeating finished calls`, (test) =>
      trials.run(trial, test, async (m) => {
        const cases = trialCases();
        const openai = await startScriptedOpenAI({ scenario: serverScenario(), latencyMs: LATENCY_MS });
        const dir = await tempDir(`medmmv-kill-${trial}-`);
        let srv = await startBundledServer(serverBundle, serverEnv(openai, dir));
        try {
          const ids = await submitAsync(api, srv.address, cases);
          m.accepted = ids.length;
          // Anywhere from "just accepted" to "about to finish" (the baseline's duration).
          const delay = Math.round(draw * baseline.durationMs);
          await sleep(delay);
          const killAt = nowMs();
          const killed = await srv.kill("SIGKILL");
          expect(killed.signal).toBe("SIGKILL");
          const beforeLog = openai.stats().log;
          const phase = phaseAt(beforeLog, killAt);
          m.phase = phase;
          const before = openai.stats().byAgent;
          const durable = durableWork(dir, ids);
          m.answered = beforeLog.filter((c) => c.status === 200 && c.end !== null && c.end < killAt).length;
          m.durable = Object.values(durable).reduce((a, b) => a + b, 0);

          srv = await startBundledServer(serverBundle, serverEnv(openai, dir));
          const views = await waitTerminal(api, srv.address, ids, 45_000);
          const listed = (await (await api(srv.address, "/cases?limit=100")).json()) as { items: Array<{ caseId: string; status: CaseStatus }> };
          const total = openai.stats().byAgent;
          await srv.kill("SIGTERM");
          const stored = await inspectStore(dir, ids);

          // Measured first, asserted below: the row is built from these numbers.
          m.terminalOnce = ids.filter((id) => {
            const status = stored.statuses[id];
            return listed.items.some((i) => i.caseId === id) && status !== "missing" && TERMINAL_STATUSES.includes(status!) && stored.finalEvents[id] === 1;
          }).length;
          m.sameAnswers = views.filter((v, i) => {
            const r = DiagnosisResult.safeParse(v.result);
            return v.status === "completed" && r.success && (r.data.answer?.option ?? null) === baseline.answers[i] && JSON.stringify(r.data.stability.rolloutAnswers) === JSON.stringify(baseline.rolloutAnswers[i]);
          }).length;
          let remade = 0;
          let durableRepeated = 0;
          for (const agent of new Set([...Object.keys(total), ...Object.keys(baseline.byAgent)])) {
            remade += Math.max(0, (total[agent] ?? 0) - (baseline.byAgent[agent] ?? 0));
            const after = (total[agent] ?? 0) - (before[agent] ?? 0);
            durableRepeated += Math.max(0, after - ((baseline.byAgent[agent] ?? 0) - (durable[agent] ?? 0)));
          }
          m.remade = remade;
          m.durableRepeated = durableRepeated;

          // Exactly the accepted cases, each terminal once, with the answers of an uninterrupted run.
          expect(listed.items.map((i) => i.caseId).sort()).toEqual([...ids].sort());
          expect(stored.unfinished).toBe(0);
          for (const [i, v] of views.entries()) {
            expect(v.status, `case ${i} (killed during ${phase} after ${delay} ms)`).toBe("completed");
            const r = DiagnosisResult.parse(v.result);
            expect(r.answer?.option ?? null).toBe(baseline.answers[i]);
            expect(r.stability.rolloutAnswers).toEqual(baseline.rolloutAnswers[i]);
            expect(stored.statuses[ids[i]!]).toBe("completed");
            expect(stored.finalEvents[ids[i]!], `final events of case ${i}`).toBe(1);
          }
          // Per agent: every call the work needs was made, and no call whose outcome was durable
          // at the kill was made again (the restart made at most what was not yet durable).
          for (const agent of Object.keys(baseline.byAgent)) {
            const after = (total[agent] ?? 0) - (before[agent] ?? 0);
            const where = `killed during ${phase} after ${delay} ms; durable then: ${JSON.stringify(durable)}`;
            expect(durable[agent] ?? 0, `${agent}: durable outcomes vs calls answered before the kill`).toBeLessThanOrEqual(before[agent] ?? 0);
            expect(total[agent] ?? 0, `${agent}: every needed call made (${where})`).toBeGreaterThanOrEqual(baseline.byAgent[agent]!);
            expect(after, `${agent}: calls after the restart vs work not yet durable (${where})`).toBeLessThanOrEqual(baseline.byAgent[agent]! - (durable[agent] ?? 0));
          }
          expect(Object.keys(total).sort()).toEqual(Object.keys(baseline.byAgent).sort());
        } finally {
          await srv.kill("SIGKILL");
          await openai.close();
        }
      }),
    90_000);
  }
});

// ---------------------------------------------------------------------------------------
// medmmv eval
// ---------------------------------------------------------------------------------------

const EVAL_ITEMS = 8;
type EvalMethod = "cot" | "medmmv";

/** A MedQA-format file of our own (not benchmark text), big enough to kill a run mid-way. */
async function syntheticMedqa(dir: string): Promise<string> {
  const file = path.join(dir, "synthetic.jsonl");
  const rows = Array.from({ length: EVAL_ITEMS }, (_, i) => ({
    question: `Synthetic case ${i}: a patient with finding number ${i} presents to clinic with fever and cough. Which option is keyed as correct?`,
    options: { A: `alpha ${i}`, B: `bravo ${i}`, C: `charlie ${i}`, D: `delta ${i}` },
    answer_idx: "ABCD"[i % 4],
    answer: `${["alpha", "bravo", "charlie", "delta"][i % 4]} ${i}`,
    meta_info: "step1",
  }));
  await writeFile(file, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return file;
}

/** Every call the scripted model answers, tagged with the item it is about and the phase. */
interface ItemCall {
  key: string;
  agent: string;
  phase: "first" | "resume";
}

function recordingScenario(base: Scenario, calls: ItemCall[], phase: () => ItemCall["phase"]): Scenario {
  const agents: Scenario["agents"] = {};
  for (const [agent, script] of Object.entries(base.agents)) {
    agents[agent] = (req: ScriptedRequest) => {
      calls.push({ key: keyOfCaseText(caseBlock(req.text)), agent, phase: phase() });
      let step: unknown = script;
      if (Array.isArray(step)) step = step[req.callIndex % step.length];
      return typeof step === "function" ? (step as (r: ScriptedRequest) => unknown)(req) : step;
    };
  }
  return { ...base, agents };
}

function evalArgs(method: EvalMethod, input: string, out: string): string[] {
  const args = ["eval", "--dataset", "medqa", "--input", input, "--method", method, "--concurrency", "2", "--out", out];
  return method === "medmmv" ? [...args, "--k", "2", "--max-repairs", "1"] : args;
}

function evalEnv(openai: ScriptedOpenAI, dataDir: string, method: EvalMethod): Record<string, string> {
  return {
    OPENAI_BASE_URL: openai.baseUrl,
    OPENAI_API_KEY: "k",
    MEDMMV_MODEL: "scripted",
    MEDMMV_LLM_BACKOFF_BASE_MS: "5",
    MEDMMV_DATA_DIR: dataDir,
    // CoT without a cache: one call per item, so the resumed run's calls can be counted exactly.
    // MedMMV with the store's cache, as users run it: deterministic calls come back from it.
    MEDMMV_CACHE: method === "cot" ? "off" : "deterministic",
    MEDMMV_LOG_LEVEL: "silent",
  };
}

const EVAL_LATENCY: Record<EvalMethod, number> = { cot: 250, medmmv: 60 };

interface ResultLine {
  id: string;
  run: number;
  status: string;
}

/** Every line must be a record: after a resume nothing torn or duplicated may remain. */
async function resultLines(file: string): Promise<{ records: ResultLine[]; bad: number }> {
  const text = await readFile(file, "utf8").catch(() => "");
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const records: ResultLine[] = [];
  let bad = 0;
  for (const l of lines) {
    try {
      records.push(JSON.parse(l) as ResultLine);
    } catch {
      bad++;
    }
  }
  return { records, bad };
}

/** What one eval kill trial measured; recorded (passed or failed) only after its assertions. */
interface EvalTrial {
  method: EvalMethod;
  phase: string;
  /** Items in results.jsonl before the kill. */
  before: number;
  /** Planned items in results.jsonl exactly once after --resume. */
  exactlyOnce: number;
  tornLines: number;
  /** Calls after --resume for items that had finished before the kill (must be 0). */
  rerunFinished: number;
}

describe("SIGKILL of medmmv eval at random points", () => {
  const base: Partial<Record<EvalMethod, { firstCallMs: number; lastCallMs: number }>> = {};
  let input: string;
  let keys: Map<string, string>;
  const trials = new TrialLog<EvalTrial>();

  beforeAll(async () => {
    const dir = await tempDir("medmmv-evalkill-in-");
    input = await syntheticMedqa(dir);
    const items = await readItems("medqa", input);
    keys = new Map(items.map((it) => [`${it.case.question}\u0000`, it.id]));
    // Uninterrupted runs: when the first model call comes and when the run ends.
    for (const method of ["cot", "medmmv"] as const) {
      const openai = await startScriptedOpenAI({ scenario: evalScenario({ answerFor: answerByItem(items, () => "gold") }), latencyMs: EVAL_LATENCY[method] });
      const out = await tempDir(`medmmv-evalkill-base-${method}-`);
      try {
        const started = nowMs();
        const run = spawnBundle(cliBundle, evalArgs(method, input, out), evalEnv(openai, await tempDir("medmmv-evalkill-data-"), method));
        const exit = await run.exited;
        expect(exit.code, run.output()).toBe(0);
        const log = openai.stats().log;
        base[method] = { firstCallMs: log[0]!.start - started, lastCallMs: Math.max(...log.map((c) => c.end ?? 0)) - started };
      } finally {
        await openai.close();
      }
    }
  }, 60_000);

  afterAll(() => {
    if (trials.records.length === 0) return;
    const byMethod = countBy(trials.values("method"), (m) => m);
    const phases = countBy(trials.values("phase"), (p) => p);
    const planned = trials.records.length * EVAL_ITEMS;
    rows.push({
      suite: "kill",
      scenario: `medmmv eval SIGKILL at a random moment, then --resume (${EVAL_ITEMS} items; ${Object.entries(byMethod)
        .map(([m, n]) => `${m} ×${n}`)
        .join(", ")})`,
      trials: trials.records.length,
      failed: trials.failed,
      outcome: [
        `${trials.passed} of ${trials.records.length} trials passed`,
        `${trials.sum("exactlyOnce")} of ${planned} planned items exactly once in results.jsonl after --resume`,
        `torn lines: ${trials.sum("tornLines")}`,
        `calls for items finished before the kill: ${trials.sum("rerunFinished")}`,
        `finished before the kill: ${trials.values("before").join("/")} of ${EVAL_ITEMS}`,
        `kill phases: ${Object.entries(phases).map(([p, n]) => `${p} ×${n}`).join(", ")}`,
        trials.failures(),
      ]
        .filter(Boolean)
        .join("; "),
      // A trial that threw before reading its results counts all its items as lost.
      itemsLost: planned - trials.sum("exactlyOnce"),
    });
  });

  const rng = createPrng(SEED ^ 0x5eed);
  for (let trial = 1; trial <= TRIALS; trial++) {
    const draw = rng();
    const method: EvalMethod = trial % 2 === 1 ? "cot" : "medmmv";
    it(`trial ${trial} (${method}): kill -9 mid-run, --resume: each item exactly once, finished items not rerun`, (test) =>
      trials.run(trial, test, async (m) => {
        m.method = method;
        const items = await readItems("medqa", input);
        const calls: ItemCall[] = [];
        let phase: ItemCall["phase"] = "first";
        const scenario = recordingScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }), calls, () => phase);
        const openai = await startScriptedOpenAI({ scenario, latencyMs: EVAL_LATENCY[method] });
        const out = await tempDir(`medmmv-evalkill-${trial}-`);
        const data = await tempDir(`medmmv-evalkill-data-${trial}-`);
        const resultsFile = path.join(out, "results.jsonl");
        try {
          const b = base[method]!;
          // Anywhere in the window where the uninterrupted run talked to the model.
          const delay = Math.round(b.firstCallMs + draw * (b.lastCallMs - b.firstCallMs));
          const started = nowMs();
          const first = spawnBundle(cliBundle, evalArgs(method, input, out), evalEnv(openai, data, method));
          await Promise.race([sleep(delay), first.exited]);
          const killAt = nowMs();
          const killed = await first.kill("SIGKILL");
          const phaseName = killed.signal === "SIGKILL" ? phaseAt(openai.stats().log, killAt) : "after the run ended";
          m.phase = phaseName;
          const before = await resultLines(resultsFile);
          const finishedBefore = new Set(before.records.map((r) => r.id));
          m.before = finishedBefore.size;

          phase = "resume";
          const firstPhaseCalls = calls.length;
          const resumed = spawnBundle(cliBundle, [...evalArgs(method, input, out), "--resume"], evalEnv(openai, data, method));
          const exit = await resumed.exited;
          const after = await resultLines(resultsFile);
          const ids = after.records.map((r) => `${r.id}#${r.run}`);
          const duplicates = ids.length - new Set(ids).size;
          // Measured first, asserted below: the row is built from these numbers.
          m.exactlyOnce = items.filter((it) => ids.filter((x) => x === `${it.id}#0`).length === 1).length;
          m.tornLines = after.bad;
          const resumeCalls = calls.slice(firstPhaseCalls);
          const itemOf = (c: ItemCall) => keys.get(c.key) ?? `unknown:${c.key.slice(0, 40)}`;
          const rerunFinished = resumeCalls.filter((c) => finishedBefore.has(itemOf(c)));
          m.rerunFinished = rerunFinished.length;

          expect(exit.code, resumed.output()).toBe(0);
          expect(after.bad).toBe(0);
          expect(duplicates).toBe(0);
          expect(ids.sort()).toEqual(items.map((it) => `${it.id}#0`).sort());
          expect(after.records.every((r) => r.status === "completed")).toBe(true);
          const summary = JSON.parse(await readFile(path.join(out, "summary.json"), "utf8")) as EvalSummary;
          expect(summary).toMatchObject({ items: EVAL_ITEMS, failed: 0, accuracy: 1, complete: true });

          // Work finished before the kill is not done again; everything else is done (again).
          expect(rerunFinished.map((c) => `${itemOf(c)} ${c.agent}`), `killed at ${Math.round(killAt - started)} ms (${phaseName})`).toEqual([]);
          expect(resumeCalls.every((c) => keys.has(c.key))).toBe(true);
          const unfinished = items.filter((it) => !finishedBefore.has(it.id)).map((it) => it.id);
          expect(new Set(resumeCalls.map(itemOf))).toEqual(new Set(unfinished));
          if (method === "cot") expect(resumeCalls.length).toBe(unfinished.length);
        } finally {
          await openai.close();
        }
      }),
    90_000);
  }
});
