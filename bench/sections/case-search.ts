import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { DISCLAIMER, type DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";
import type { CaseStore, ListCasesQuery } from "../../src/server/store/case-store.js";
import { openStore } from "../../src/server/store/open-store.js";
import type { BenchContext } from "../harness/context.js";
import { fmt, table, yesNo, type SectionReport } from "../harness/report.js";
import { createRunStores } from "../harness/run-stores.js";

const TENANTS = 5;
const CLINICIANS_PER_TENANT = 4;
/** The target: a page of a search answers within this on a store of the bench's size. */
const TARGET_MS = 50;

/** A finished result with what search reads, varied by `i`: answers, abstentions, unsupported claims, models, prompt hashes. */
function result(caseId: string, i: number): DiagnosisResult {
  const abstained = i % 7 === 0;
  // Varied independently of the tenant (i % TENANTS), so every tenant has each kind.
  const unsupported = Math.floor(i / TENANTS) % 4;
  return {
    caseId,
    status: abstained ? "abstained" : "completed",
    answer: abstained ? null : { option: "ABCD"[i % 4]!, text: `Answer ${i % 4}` },
    answerSupport: abstained ? null : (i % 10) / 10,
    abstentionReason: abstained ? "paths disagree" : null,
    path: { id: "p1", summary: "s", steps: [{ text: "t", stage: "knowledge", claims: Array.from({ length: 3 }, (_, k) => ({ text: `c${k}`, verdict: k < unsupported ? ("unsupported" as const) : ("supported" as const), evidence: [] })) }] },
    evidenceGraph: null,
    candidates: [],
    stability: { rolloutAnswers: [], distribution: {}, rgm: 0, entropy: 0 },
    hallucinations: [],
    usage: { llmCalls: 0, searchCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, wallMs: 0, byAgent: {} },
    provenance: { models: { executor: `model-${Math.floor(i / TENANTS) % 3}`, judge: "judge-1" }, prompts: { rollout: Math.floor(i / TENANTS) % 2 ? "a1b2c3d4e5f6" : "f6e5d4c3b2a1" }, config: {}, startedAt: new Date(0).toISOString(), finishedAt: new Date(0).toISOString(), version: "bench" },
    disclaimer: DISCLAIMER,
  };
}

async function fill(store: CaseStore, n: number, log: (s: string) => void): Promise<void> {
  const batch = 25;
  for (let start = 0; start < n; start += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, n - start) }, async (_, j) => {
        const i = start + j;
        const tenant = `tenant-${i % TENANTS}`;
        const owner = `${tenant}-dr-${Math.floor(i / TENANTS) % CLINICIANS_PER_TENANT}`;
        const id = `bench-${i}`;
        await store.createCase({ id, owner, tenant, submittedBy: owner, input: { id, question: "q", images: [], ...(i % 3 ? {} : { pathway: "bone-marrow" }) }, options: {} });
        await store.saveResult(id, result(id, i), null);
      }),
    );
    if ((start / batch) % 80 === 0) log(`case-search: ${start}/${n} stored`);
  }
}

/** Median milliseconds of `runs` runs of `fn`, after one warm-up. */
async function median(runs: number, fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    await fn();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return t[Math.floor(t.length / 2)]!;
}

const QUERIES: Array<{ label: string; q: Omit<ListCasesQuery, "limit"> }> = [
  { label: "auditor: the tenant's newest", q: { tenant: "tenant-1" } },
  { label: "clinician: own cases, abstained", q: { tenant: "tenant-1", owner: "tenant-1-dr-2", abstained: true } },
  { label: "auditor: model X, ≥ 2 unsupported claims", q: { tenant: "tenant-1", model: "model-2", minUnsupportedClaims: 2 } },
  { label: "auditor: prompt hash, pathway, a month", q: { tenant: "tenant-1", promptHash: "a1b2c3d4e5f6", pathway: "bone-marrow", from: "2000-01-01", to: "2100-01-01" } },
];

/**
 * Case search (GET /cases) on each store at the size an auditor meets: pages of 20, newest
 * first, with the filters of the API, timed at the store (the HTTP layer adds the same
 * small cost to both), and each backend's query plan, which must walk an index.
 */
export async function caseSearch(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const n = ctx.quick ? 2_000 : 10_000;
  const runs = ctx.quick ? 5 : 21;
  const rows: Array<Array<string | number>> = [];
  const plans: string[] = [];
  const verdicts: SectionReport["verdicts"] = [];
  const dir = await mkdtemp(join(tmpdir(), "medmmv-bench-search-"));
  const stores = await createRunStores("search");
  try {
    for (const backend of ["sqlite", "postgres"] as const) {
      const store = await openStore({ databaseUrl: backend === "postgres" ? stores.databaseUrl : null, dataDir: dir });
      try {
        const t0 = Date.now();
        await fill(store, n, ctx.log);
        const fillSec = (Date.now() - t0) / 1000;
        if (backend === "postgres") {
          // What autovacuum would have done by now: statistics for the planner.
          const c = new pg.Client({ connectionString: stores.databaseUrl });
          await c.connect();
          await c.query("ANALYZE medmmv_cases");
          await c.end();
        }
        let worst = 0;
        for (const { label, q } of QUERIES) {
          const first = await store.listCases({ ...q, limit: 20 });
          const ms = await median(runs, () => store.listCases({ ...q, limit: 20 }));
          let deep = first;
          for (let p = 0; p < 9 && deep.nextCursor; p++) deep = await store.listCases({ ...q, limit: 20, cursor: deep.nextCursor });
          const deepMs = deep.nextCursor ? await median(runs, () => store.listCases({ ...q, limit: 20, cursor: deep.nextCursor })) : NaN;
          worst = Math.max(worst, ms, Number.isFinite(deepMs) ? deepMs : 0);
          rows.push([backend, label, first.items.length, fmt(ms, 2), Number.isFinite(deepMs) ? fmt(deepMs, 2) : "–"]);
        }
        const plan = String(await store.explainListCases({ tenant: "tenant-1", model: "model-2", minUnsupportedClaims: 2, limit: 20 }));
        const indexed = /medmmv_cases_tenant_(owner_)?created/.test(plan);
        plans.push(`${backend} (${n.toLocaleString("en")} cases stored in ${fmt(fillSec, 0)} s):`, "", "```", plan, "```", "");
        verdicts.push({ target: `${backend}: a page of every search within ${TARGET_MS} ms (median) over ${n.toLocaleString("en")} cases`, measured: `worst ${fmt(worst, 2)} ms`, met: worst <= TARGET_MS });
        verdicts.push({ target: `${backend}: the query plan walks the (tenant, created_at, id) index`, measured: yesNo(indexed), met: indexed });
      } finally {
        await store.close();
      }
    }
  } finally {
    await stores.remove();
    await rm(dir, { recursive: true, force: true });
  }
  const body = [
    `${n.toLocaleString("en")} finished cases in ${TENANTS} tenants of ${CLINICIANS_PER_TENANT} clinicians each, written through the store (createCase, saveResult: the search columns are written with the result), then each search of GET /cases timed at the store: a page of 20, newest first, median of ${runs}; "page 10" follows the cursor nine times first. Each tenant holds ${(n / TENANTS).toLocaleString("en")} cases.`,
    "",
    table(["store", "search", "rows", "ms, page 1", "ms, page 10"], rows, ["l", "l", "r", "r", "r"]),
    "",
    "The plan of the model + unsupported-claims search (Postgres `EXPLAIN`, SQLite `EXPLAIN QUERY PLAN`): a backwards range scan of the tenant's index, newest first, the other filters checked on the rows it walks, stopping at the page's end.",
    "",
    ...plans,
  ].join("\n");
  return { id: "case-search", title: "Case search over 10,000 stored cases, on SQLite and Postgres", command: "npm run bench -- --only case-search", body, verdicts, seconds: (Date.now() - started) / 1000 };
}
