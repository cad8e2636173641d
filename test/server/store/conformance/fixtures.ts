import { createHash, randomBytes } from "node:crypto";
import { afterEach, beforeEach, expect } from "vitest";
import type { LoadedImage } from "../../../../src/core/contracts/clinical-case.js";
import { DISCLAIMER, type DiagnosisResult } from "../../../../src/core/contracts/diagnosis-result.js";
import type { CaseStore, NewCase, StoredCaseInput } from "../../../../src/server/store/case-store.js";
import { MedmmvError, type ErrorCode } from "../../../../src/core/contracts/errors.js";

/**
 * One behavioural contract for every CaseStore backend (docs/architecture.md#house-style), one file per
 * role (src/server/store/roles/); this file holds what they share: the harness each backend
 * provides and the fixtures. Each test gets a fresh, empty location from the harness.
 */
export interface StoreHarness {
  /** An initialised store on an empty location. */
  store: CaseStore;
  /** Another initialised store object on the same file / database, as a second process would open it (with the audit signing key, when given). */
  reopen(opts?: { auditSigningKey?: string }): Promise<CaseStore>;
  /** Close every store the harness opened and remove the location. */
  dispose(): Promise<void>;
  /**
   * Overwrite a case's createdAt behind the store's back. Within one process the store's
   * clock never repeats, so equal timestamps (two processes, one millisecond) need this.
   */
  setCreatedAt(id: string, createdAt: string): Promise<void>;
  /**
   * Run SQL behind the store's back, as someone with the database in hand would (tables by
   * their unqualified names): how the access-trail tests tamper with it.
   */
  exec(sql: string): Promise<void>;
  /** The query plan of `sql` (tables by unqualified names), sequential scans discouraged as on a large table. */
  explain(sql: string): Promise<string>;
}

/**
 * A fresh store for every test of the describe block this is called in, disposed after it:
 * `use` receives the harness before each test (each role's file keeps it in its own variables).
 */
export function freshStoreEach(makeStore: () => Promise<StoreHarness>, use: (h: StoreHarness) => void): void {
  let h: StoreHarness | undefined;
  beforeEach(async () => {
    h = await makeStore();
    use(h);
  });
  afterEach(async () => {
    await h?.dispose();
  });
}

// ---- fixtures -------------------------------------------------------------------------

export function makeImage(seed: string, mimeType: LoadedImage["mimeType"] = "image/png"): LoadedImage {
  const bytes = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.from(seed, "utf8"), randomBytes(64)]);
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return { id: `img-${seed}`, mimeType, data: bytes.toString("base64"), sha256, width: 3, height: 2 };
}

export function makeNewCase(id: string, over: Partial<NewCase> = {}, images: LoadedImage[] = []): NewCase {
  const input: StoredCaseInput = {
    id,
    question: "A 36-year-old man with knee pain. What is the most likely diagnosis? — “naïve” ü 漢字 😀",
    notes: "Line one.\nLine two with \"quotes\" and a backslash \\ and a tab\t.",
    options: { A: "Gout", B: "Septic arthritis", C: "Osteoarthritis" },
    images: images.map((i) => ({ id: i.id, sha256: i.sha256, mimeType: i.mimeType, caption: `Figure ${i.id}` })),
    patient: { age: 36, sex: "male", weightKg: 81.5 },
    metadata: { dataset: "medxpertqa-mm", nested: { list: [1, 2.25, true, null, "x"], empty: {} } },
  };
  return { id, owner: "owner-a", input, options: { k: 5, maxRepairs: 3, ablations: [] }, ...over };
}

export function makeResult(caseId: string, status: DiagnosisResult["status"] = "completed"): DiagnosisResult {
  return {
    caseId,
    status,
    answer: status === "completed" ? { option: "B", text: "Septic arthritis" } : null,
    answerSupport: status === "completed" ? 0.72 : null,
    abstentionReason: status === "abstained" ? "paths disagree" : null,
    path: {
      id: "path-2",
      summary: "Fever and effusion point to infection.",
      steps: [
        {
          text: "Hot swollen knee with fever.",
          stage: "knowledge",
          claims: [{ text: "Fever suggests infection", verdict: "supported", evidence: ["f:abc", "k:def"] }],
        },
      ],
    },
    evidenceGraph: { options: { type: "directed", multi: true }, nodes: [{ key: "f:abc", attributes: { kind: "finding", category: "symptom", label: "fever", status: "active", source: { agent: "text-doctor", quote: "fever" } } }], edges: [] },
    candidates: [
      {
        pathId: "path-2",
        initialAnswer: "A",
        finalAnswer: "B",
        repairs: 1,
        scores: { evidence: 0.8, coherence: 0.9, repairPenalty: 0.3333333333333333, cu: 1.3666666666666667 },
        selected: true,
        hdReports: [],
      },
    ],
    stability: { rolloutAnswers: ["A", "B", null], distribution: { A: 0.5, B: 0.5 }, rgm: 0.81, entropy: 1 },
    hallucinations: [],
    usage: {
      llmCalls: 31,
      searchCalls: 8,
      promptTokens: 1200,
      completionTokens: 300,
      costUsd: 0.0123,
      wallMs: 4567,
      byAgent: { rollout: { calls: 5 } },
    },
    provenance: {
      models: { executor: "m" },
      prompts: { rollout: "sha256:00" },
      config: { k: 5, maxRepairs: 3, weights: [1, 1, 1] },
      startedAt: "2025-01-01T00:00:00.000Z",
      finishedAt: "2025-01-01T00:00:05.000Z",
      version: "0.1.0",
    },
    ...(status === "failed" ? { error: { code: "PIPELINE_FAILED", message: "nothing left" } } : {}),
    disclaimer: DISCLAIMER,
  };
}

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected a MedmmvError ${code}`).toBeInstanceOf(MedmmvError);
  expect((err as MedmmvError).code).toBe(code);
}
