import { createHash, randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import type { LoadedImage } from "../../../src/core/contracts/clinical-case.js";
import { DISCLAIMER, type DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import type { CaseStore, NewCase, NewTurn, StoredCaseInput } from "../../../src/server/store/case-store.js";
import { MedmmvError, type ErrorCode } from "../../../src/core/contracts/errors.js";

/**
 * One behavioural contract for every CaseStore backend (docs/architecture.md#house-style). Each test gets a
 * fresh, empty location from the harness.
 */
export interface StoreHarness {
  /** An initialised store on an empty location. */
  store: CaseStore;
  /** Another initialised store object on the same file / database, as a second process would open it. */
  reopen(): Promise<CaseStore>;
  /** Close every store the harness opened and remove the location. */
  dispose(): Promise<void>;
  /**
   * Overwrite a case's createdAt behind the store's back. Within one process the store's
   * clock never repeats, so equal timestamps (two processes, one millisecond) need this.
   */
  setCreatedAt(id: string, createdAt: string): Promise<void>;
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

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected a MedmmvError ${code}`).toBeInstanceOf(MedmmvError);
  expect((err as MedmmvError).code).toBe(code);
}

// ---- the suite ------------------------------------------------------------------------

export function describeStoreConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance: ${name}`, () => {
    let h: StoreHarness;
    let store: CaseStore;
    beforeEach(async () => {
      h = await makeStore();
      store = h.store;
    });
    afterEach(async () => {
      await h.dispose();
    });

    describe("cases", () => {
      it("creates a queued case with ISO timestamps and reads it back exactly", async () => {
        const nc = makeNewCase("case-1", { idempotencyKey: "k1", requestHash: "sha256:body" });
        const created = await store.createCase(nc);
        expect(created).toMatchObject({
          id: "case-1",
          owner: "owner-a",
          status: "queued",
          progress: null,
          result: null,
          fullEvidenceGraph: null,
          error: null,
          idempotencyKey: "k1",
          requestHash: "sha256:body",
        });
        expect(created.input).toEqual(nc.input);
        expect(created.options).toEqual(nc.options);
        expect(created.createdAt).toMatch(ISO);
        expect(created.updatedAt).toBe(created.createdAt);
        expect(Math.abs(Date.parse(created.createdAt) - Date.now())).toBeLessThan(60_000);
        expect(await store.getCase("case-1")).toEqual(created);
        expect(await store.getCase("nope")).toBeNull();
      });

      it("rejects a duplicate id with CONFLICT and leaves the first case untouched", async () => {
        const first = await store.createCase(makeNewCase("dup"));
        await expectCode(store.createCase(makeNewCase("dup", { owner: "owner-b" })), "CONFLICT");
        expect(await store.getCase("dup")).toEqual(first);
      });

      it("scopes idempotency keys per owner", async () => {
        const a = await store.createCase(makeNewCase("c-a", { owner: "alice", idempotencyKey: "same" }));
        const b = await store.createCase(makeNewCase("c-b", { owner: "bob", idempotencyKey: "same" }));
        expect((await store.findByIdempotencyKey("alice", "same"))?.id).toBe(a.id);
        expect((await store.findByIdempotencyKey("bob", "same"))?.id).toBe(b.id);
        expect(await store.findByIdempotencyKey("carol", "same")).toBeNull();
        expect(await store.findByIdempotencyKey("alice", "other")).toBeNull();
        // Cases without a key never collide with each other.
        await store.createCase(makeNewCase("c-n1", { owner: "alice" }));
        await store.createCase(makeNewCase("c-n2", { owner: "alice", idempotencyKey: null }));
      });

      it("lets only one of several racing creates with the same owner and key succeed", async () => {
        const attempts = await Promise.allSettled(
          Array.from({ length: 6 }, (_, i) => store.createCase(makeNewCase(`race-${i}`, { idempotencyKey: "once" }))),
        );
        const ok = attempts.filter((a) => a.status === "fulfilled");
        const failed = attempts.filter((a): a is PromiseRejectedResult => a.status === "rejected");
        expect(ok).toHaveLength(1);
        expect(failed).toHaveLength(5);
        for (const f of failed) {
          expect(f.reason).toBeInstanceOf(MedmmvError);
          expect((f.reason as MedmmvError).code).toBe("CONFLICT");
        }
        const winner = (ok[0] as PromiseFulfilledResult<{ id: string }>).value.id;
        expect((await store.findByIdempotencyKey("owner-a", "once"))?.id).toBe(winner);
        const losers = Array.from({ length: 6 }, (_, i) => `race-${i}`).filter((id) => id !== winner);
        for (const id of losers) expect(await store.getCase(id)).toBeNull();
      });

      it("updates status, progress and error, moving updatedAt forward each time", async () => {
        const c = await store.createCase(makeNewCase("st"));
        await store.setStatus("st", "running");
        const running = await store.getCase("st");
        expect(running?.status).toBe("running");
        expect(running!.updatedAt > c.updatedAt).toBe(true);
        expect(running!.createdAt).toBe(c.createdAt);

        await store.setProgress("st", { step: "rollouts", done: 2, total: 5 });
        const progressed = await store.getCase("st");
        expect(progressed?.progress).toEqual({ step: "rollouts", done: 2, total: 5 });
        expect(progressed!.updatedAt > running!.updatedAt).toBe(true);

        await store.setStatus("st", "failed", { code: "PIPELINE_FAILED", message: "no paths" });
        expect(await store.getCase("st")).toMatchObject({
          status: "failed",
          error: { code: "PIPELINE_FAILED", message: "no paths" },
          progress: { step: "rollouts", done: 2, total: 5 },
        });
        // Moving on (e.g. a retry) clears the stale error.
        await store.setStatus("st", "queued");
        expect(await store.getCase("st")).toMatchObject({ status: "queued", error: null });
      });

      it("saves the result and full graph atomically, taking the status from the result", async () => {
        const c = await store.createCase(makeNewCase("res"));
        await store.setStatus("res", "running");
        const result = makeResult("res", "abstained");
        const full = {
          options: { type: "directed", multi: true, allowSelfLoops: true },
          attributes: {},
          nodes: [
            { key: "f:1", attributes: { kind: "finding", label: "fever 38.9 °C", source: { agent: "text-doctor", span: [3, 9] } } },
            { key: "k:2", attributes: { kind: "knowledge", status: "retracted", score: -0.5 } },
          ],
          edges: [{ key: "e1", source: "f:1", target: "k:2", attributes: { relation: "supports" } }],
        };
        await store.saveResult("res", result, full);
        const saved = await store.getCase("res");
        expect(saved?.status).toBe("abstained");
        expect(saved?.result).toEqual(result);
        expect(saved?.fullEvidenceGraph).toEqual(full);
        expect(saved!.updatedAt > c.updatedAt).toBe(true);

        await store.saveResult("res", makeResult("res", "failed"), null);
        expect(await store.getCase("res")).toMatchObject({
          status: "failed",
          fullEvidenceGraph: null,
          error: { code: "PIPELINE_FAILED", message: "nothing left" },
        });
      });

      it("saves a result and its final event in one write, the event numbered after the others", async () => {
        await store.createCase(makeNewCase("fin"));
        await store.appendEvent("fin", "rollout", { index: 0 });
        const event = await store.saveResult("fin", makeResult("fin"), null, { type: "final", data: { status: "completed" } });
        expect(event).toMatchObject({ caseId: "fin", seq: 2, type: "final", data: { status: "completed" } });
        const events = await store.listEvents("fin");
        expect(events.map((e) => [e.seq, e.type])).toEqual([
          [1, "rollout"],
          [2, "final"],
        ]);
        expect((await store.getCase("fin"))?.status).toBe("completed");
        await store.appendEvent("fin", "late", {});
        expect((await store.listEvents("fin", 2)).map((e) => e.seq)).toEqual([3]);
        await expectCode(store.saveResult("ghost", makeResult("ghost"), null, { type: "final", data: {} }), "NOT_FOUND");
      });

      it("reports NOT_FOUND when updating a case that does not exist", async () => {
        await expectCode(store.setStatus("ghost", "running"), "NOT_FOUND");
        await expectCode(store.setProgress("ghost", { step: "x", done: 0, total: 1 }), "NOT_FOUND");
        await expectCode(store.saveResult("ghost", makeResult("ghost"), null), "NOT_FOUND");
        await expectCode(store.appendEvent("ghost", "status", {}), "NOT_FOUND");
      });
    });

    describe("listing", () => {
      it("lists only the owner's cases, newest first, with answers from results", async () => {
        await store.createCase(makeNewCase("a1", { owner: "alice" }));
        await store.createCase(makeNewCase("b1", { owner: "bob" }));
        await store.createCase(makeNewCase("a2", { owner: "alice" }));
        await store.saveResult("a1", makeResult("a1"), null);
        const page = await store.listCases({ owner: "alice", limit: 10 });
        expect(page.items.map((i) => i.id)).toEqual(["a2", "a1"]);
        expect(page.nextCursor).toBeNull();
        expect(page.items[1]).toMatchObject({ status: "completed", answer: { option: "B", text: "Septic arthritis" } });
        expect(page.items[0]).toMatchObject({ status: "queued", answer: null });
        expect(page.items[0]!.createdAt).toMatch(ISO);
        expect(page.items[0]!.updatedAt).toMatch(ISO);
        expect((await store.listCases({ owner: "bob", limit: 10 })).items.map((i) => i.id)).toEqual(["b1"]);
        expect((await store.listCases({ owner: "nobody", limit: 10 })).items).toEqual([]);
      });

      it("paginates with a cursor that stays stable while new cases arrive", async () => {
        for (let i = 1; i <= 7; i++) await store.createCase(makeNewCase(`p${i}`));
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const res: Awaited<ReturnType<CaseStore["listCases"]>> = await store.listCases({ owner: "owner-a", limit: 3, cursor });
          expect(res.items.length).toBeLessThanOrEqual(3);
          seen.push(...res.items.map((i) => i.id));
          cursor = res.nextCursor;
          pages++;
          // New work lands between page requests; it must not shift or repeat later pages.
          await store.createCase(makeNewCase(`new-${pages}`));
        } while (cursor && pages < 10);
        expect(seen).toEqual(["p7", "p6", "p5", "p4", "p3", "p2", "p1"]);
        expect(pages).toBe(3);
        const first = await store.listCases({ owner: "owner-a", limit: 2 });
        expect(first.items.map((i) => i.id)).toEqual(["new-3", "new-2"]);
      });

      it("breaks createdAt ties by id, descending, across page boundaries", async () => {
        await store.createCase(makeNewCase("old"));
        for (const id of ["t1", "t3", "t2", "t5", "t4"]) await store.createCase(makeNewCase(id));
        const same = "2030-01-01T00:00:00.000Z";
        for (const id of ["t1", "t2", "t3", "t4", "t5"]) await h.setCreatedAt(id, same);
        const seen: string[][] = [];
        let cursor: string | null = null;
        do {
          const res: Awaited<ReturnType<CaseStore["listCases"]>> = await store.listCases({ owner: "owner-a", limit: 2, cursor });
          seen.push(res.items.map((i) => i.id));
          cursor = res.nextCursor;
        } while (cursor && seen.length < 10);
        expect(seen).toEqual([["t5", "t4"], ["t3", "t2"], ["t1", "old"]]);
        expect((await store.getCase("t3"))?.createdAt).toBe(same);
      });

      it("returns no cursor when the last page is exactly full", async () => {
        for (let i = 1; i <= 4; i++) await store.createCase(makeNewCase(`x${i}`));
        const one = await store.listCases({ owner: "owner-a", limit: 2 });
        const two = await store.listCases({ owner: "owner-a", limit: 2, cursor: one.nextCursor });
        expect(two.items.map((i) => i.id)).toEqual(["x2", "x1"]);
        expect(two.nextCursor).toBeNull();
      });

      it("filters by status and rejects bad cursors and limits", async () => {
        for (let i = 1; i <= 5; i++) await store.createCase(makeNewCase(`s${i}`));
        await store.saveResult("s2", makeResult("s2"), null);
        await store.saveResult("s4", makeResult("s4"), null);
        await store.setStatus("s3", "running");
        const done = await store.listCases({ owner: "owner-a", limit: 1, status: "completed" });
        expect(done.items.map((i) => i.id)).toEqual(["s4"]);
        const rest = await store.listCases({ owner: "owner-a", limit: 1, status: "completed", cursor: done.nextCursor });
        expect(rest.items.map((i) => i.id)).toEqual(["s2"]);
        expect(rest.nextCursor).toBeNull();
        const queued = await store.listCases({ owner: "owner-a", limit: 100, status: "queued" });
        expect(queued.items.map((i) => i.id)).toEqual(["s5", "s1"]);
        await expectCode(store.listCases({ owner: "owner-a", limit: 5, cursor: "not-a-cursor" }), "INVALID_INPUT");
        await expectCode(store.listCases({ owner: "owner-a", limit: 0 }), "INVALID_INPUT");
        await expectCode(store.listCases({ owner: "owner-a", limit: 101 }), "INVALID_INPUT");
      });

      it("counts the cases of other owners, whatever their status", async () => {
        expect(await store.countCasesNotOwnedBy("demo")).toBe(0);
        await store.createCase(makeNewCase("o1", { owner: "demo" }));
        await store.createCase(makeNewCase("o2", { owner: "demo" }));
        expect(await store.countCasesNotOwnedBy("demo")).toBe(0);
        await store.createCase(makeNewCase("o3", { owner: "cli" }));
        await store.createCase(makeNewCase("o4", { owner: "someone" }));
        await store.saveResult("o4", makeResult("o4"), null);
        expect(await store.countCasesNotOwnedBy("demo")).toBe(2);
        expect(await store.countCasesNotOwnedBy("cli")).toBe(3);
        await store.deleteCase("o3");
        expect(await store.countCasesNotOwnedBy("demo")).toBe(1);
      });

      it("lists unfinished cases across owners, oldest first", async () => {
        await store.createCase(makeNewCase("u1", { owner: "alice" }));
        await store.createCase(makeNewCase("u2", { owner: "bob" }));
        await store.createCase(makeNewCase("u3", { owner: "alice" }));
        await store.createCase(makeNewCase("u4", { owner: "carol" }));
        await store.setStatus("u2", "running");
        await store.saveResult("u3", makeResult("u3"), null);
        await store.setStatus("u4", "failed", { code: "ABORTED", message: "aborted" });
        const open = await store.listUnfinished();
        expect(open.map((c) => [c.id, c.status])).toEqual([
          ["u1", "queued"],
          ["u2", "running"],
        ]);
        expect(open[0]!.input).toEqual(makeNewCase("u1").input);
      });
    });

    describe("images", () => {
      it("stores an image once by content hash and returns the same bytes", async () => {
        const img = makeImage("xray", "image/jpeg");
        await store.putImage(img);
        await store.putImage({ ...img, id: "another-id", caption: "again" });
        const got = await store.getImage(img.sha256);
        expect(got).not.toBeNull();
        expect(got!.data).toBe(img.data);
        expect(got!.mimeType).toBe("image/jpeg");
        expect(got!.sha256).toBe(img.sha256);
        expect(Buffer.from(got!.data, "base64").equals(Buffer.from(img.data, "base64"))).toBe(true);
        expect(await store.getImage(makeImage("never-stored").sha256)).toBeNull();
      });

      it("refuses an image whose sha256 does not match its bytes", async () => {
        const img = makeImage("a");
        await expectCode(store.putImage({ ...img, sha256: makeImage("b").sha256 }), "INVALID_INPUT");
        expect(await store.getImage(img.sha256)).toBeNull();
      });

      it("deletes images only when no remaining case refers to them", async () => {
        const shared = makeImage("shared");
        const own = makeImage("own");
        await store.putImage(shared);
        await store.putImage(own);
        await store.createCase(makeNewCase("img-a", {}, [shared, own]));
        await store.createCase(makeNewCase("img-b", {}, [shared]));
        expect((await store.getCase("img-a"))?.input.images.map((i) => i.sha256)).toEqual([shared.sha256, own.sha256]);

        expect(await store.deleteCase("img-a")).toBe(true);
        expect(await store.getImage(own.sha256)).toBeNull();
        expect((await store.getImage(shared.sha256))?.data).toBe(shared.data);

        expect(await store.deleteCase("img-b")).toBe(true);
        expect(await store.getImage(shared.sha256)).toBeNull();
      });

      it("refuses a case that refers to an image never stored", async () => {
        await expectCode(store.createCase(makeNewCase("no-img", {}, [makeImage("missing")])), "STORE_FAILED");
        expect(await store.getCase("no-img")).toBeNull();
      });
    });

    describe("events", () => {
      it("numbers events 1, 2, 3… per case and lists those after a given seq", async () => {
        await store.createCase(makeNewCase("ev"));
        await store.createCase(makeNewCase("ev-other"));
        const e1 = await store.appendEvent("ev", "status", { status: "running" });
        const e2 = await store.appendEvent("ev", "rollout", { index: 0, answer: "B", nested: { ok: [true, 1.5] } });
        const o1 = await store.appendEvent("ev-other", "status", { status: "running" });
        const e3 = await store.appendEvent("ev", "final", {});
        expect([e1.seq, e2.seq, e3.seq, o1.seq]).toEqual([1, 2, 3, 1]);
        expect(e2).toMatchObject({ caseId: "ev", type: "rollout", data: { index: 0, answer: "B", nested: { ok: [true, 1.5] } } });
        expect(e2.at).toMatch(ISO);

        const all = await store.listEvents("ev");
        expect(all).toEqual([e1, e2, e3]);
        expect(await store.listEvents("ev", 1)).toEqual([e2, e3]);
        expect(await store.listEvents("ev", 3)).toEqual([]);
        expect(await store.listEvents("missing")).toEqual([]);
      });

      it("assigns gap-free, unique seqs under 50 concurrent appends", async () => {
        await store.createCase(makeNewCase("burst"));
        const events = await Promise.all(
          Array.from({ length: 50 }, (_, i) => store.appendEvent("burst", "tick", { i })),
        );
        expect(events.map((e) => e.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
        const listed = await store.listEvents("burst");
        expect(listed.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
        // Every append is there exactly once, under the seq it was told.
        const bySeq = new Map(events.map((e) => [e.seq, (e.data as { i: number }).i]));
        for (const e of listed) expect((e.data as { i: number }).i).toBe(bySeq.get(e.seq));
      });
    });

    describe("response cache", () => {
      it("gets what was put, and keeps the first value when a key is put twice", async () => {
        expect(await store.getCachedResponse("k")).toBeNull();
        const value = { message: { role: "assistant", content: "B" }, usage: { prompt_tokens: 10, completion_tokens: 2 } };
        await store.putCachedResponse("k", value);
        await store.putCachedResponse("k", { message: { content: "different" } });
        const got = await store.getCachedResponse("k");
        expect(got?.value).toEqual(value);
        expect(got?.createdAt).toMatch(ISO);
        expect(await store.getCachedResponse("other")).toBeNull();
      });
    });

    describe("leases (several processes on one store)", () => {
      const T = 1_000_000;
      const lease = (runner: string, expiresAtMs: number) => ({ runner, expiresAtMs });

      it("a case created with a lease is held by its creator until the lease expires", async () => {
        await store.createCase(makeNewCase("ls-1", { lease: lease("A", T + 30_000) }));
        expect(await store.listUnfinishedLeases()).toEqual([{ id: "ls-1", runner: "A", expiresAtMs: T + 30_000 }]);
        expect(await store.claimCase("ls-1", lease("B", T + 60_000), T + 29_999)).toBe(false);
        // The holder may claim again (a resume in the same process).
        expect(await store.claimCase("ls-1", lease("A", T + 40_000), T + 29_999)).toBe(true);
        expect(await store.claimCase("ls-1", lease("B", T + 90_000), T + 40_001)).toBe(true);
        expect(await store.listUnfinishedLeases()).toEqual([{ id: "ls-1", runner: "B", expiresAtMs: T + 90_000 }]);
        // Exactly one of two racing claims wins.
        const race = await Promise.all([store.claimCase("ls-1", lease("C", T + 200_000), T + 100_000), store.claimCase("ls-1", lease("D", T + 200_000), T + 100_000)]);
        expect(race.filter(Boolean)).toHaveLength(1);
      });

      it("a case without a holder is claimable at once; a runner known to be dead can be taken over before expiry", async () => {
        await store.createCase(makeNewCase("ls-free"));
        expect(await store.listUnfinishedLeases()).toEqual([{ id: "ls-free", runner: null, expiresAtMs: null }]);
        expect(await store.claimCase("ls-free", lease("A", T + 30_000), T)).toBe(true);
        expect(await store.claimCase("ls-free", lease("B", T + 30_000), T + 1, "someone-else")).toBe(false);
        expect(await store.claimCase("ls-free", lease("B", T + 30_000), T + 1, "A")).toBe(true);
      });

      it("renewLeases extends the holder's leases and names the ones it lost", async () => {
        await store.createCase(makeNewCase("ls-r1", { lease: lease("A", T + 10) }));
        await store.createCase(makeNewCase("ls-r2", { lease: lease("A", T + 10) }));
        await store.createCase(makeNewCase("ls-r3", { lease: lease("A", T + 10) }));
        expect(await store.claimCase("ls-r2", lease("B", T + 50_000), T + 20)).toBe(true);
        await store.deleteCase("ls-r3");
        expect(await store.renewLeases("A", ["ls-r1", "ls-r2", "ls-r3"], T + 60_000)).toEqual(["ls-r2", "ls-r3"]);
        expect(await store.renewLeases("A", [], T)).toEqual([]);
        expect(await store.claimCase("ls-r1", lease("B", T + 70_000), T + 30_000)).toBe(false);
      });

      it("releaseLeases frees the holder's own cases only; finished cases are never claimable", async () => {
        await store.createCase(makeNewCase("ls-x", { lease: lease("A", T + 60_000) }));
        await store.createCase(makeNewCase("ls-y", { lease: lease("B", T + 60_000) }));
        await store.releaseLeases("A", ["ls-x", "ls-y"]);
        expect(await store.listUnfinishedLeases()).toEqual([
          { id: "ls-x", runner: null, expiresAtMs: null },
          { id: "ls-y", runner: "B", expiresAtMs: T + 60_000 },
        ]);
        await store.saveResult("ls-x", makeResult("ls-x"), null);
        expect(await store.claimCase("ls-x", lease("C", T + 60_000), T)).toBe(false);
        expect(await store.claimCase("missing", lease("C", T + 60_000), T)).toBe(false);
        expect((await store.listUnfinishedLeases()).map((l) => l.id)).toEqual(["ls-y"]);
      });
    });

    describe("deleteCase", () => {
      it("removes the case and its events, and returns false when absent", async () => {
        await store.createCase(makeNewCase("gone", { idempotencyKey: "g" }));
        await store.createCase(makeNewCase("kept"));
        await store.appendEvent("gone", "status", { status: "running" });
        await store.appendEvent("kept", "status", { status: "running" });
        expect(await store.deleteCase("gone")).toBe(true);
        expect(await store.getCase("gone")).toBeNull();
        expect(await store.findByIdempotencyKey("owner-a", "g")).toBeNull();
        expect(await store.listEvents("gone")).toEqual([]);
        expect((await store.listEvents("kept")).map((e) => e.seq)).toEqual([1]);
        expect(await store.deleteCase("gone")).toBe(false);
        expect(await store.deleteCase("never")).toBe(false);
        // The id is free again, and its event numbering starts over.
        await store.createCase(makeNewCase("gone"));
        expect((await store.appendEvent("gone", "status", {})).seq).toBe(1);
      });
    });

    describe("checkpointer", () => {
      const Counter = Annotation.Root({
        count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
      });

      it("persists LangGraph checkpoints under the case id and deleteCase removes them", async () => {
        const graph = new StateGraph(Counter)
          .addNode("one", async () => ({ count: 1 }))
          .addNode("two", async () => ({ count: 10 }))
          .addEdge(START, "one")
          .addEdge("one", "two")
          .addEdge("two", END)
          .compile({ checkpointer: store.checkpointer() });
        await store.createCase(makeNewCase("cp"));
        await store.createCase(makeNewCase("cp-other"));
        const cfg = { configurable: { thread_id: "cp" } };
        const otherCfg = { configurable: { thread_id: "cp-other" } };
        expect(await graph.invoke({ count: 100 }, cfg)).toEqual({ count: 111 });
        await graph.invoke({ count: 5 }, otherCfg);

        const state = await graph.getState(cfg);
        expect(state.values).toEqual({ count: 111 });
        expect(state.next).toEqual([]);

        // Another store object on the same location sees the same checkpoints.
        const second = await h.reopen();
        expect((await second.checkpointer().getTuple(cfg))?.checkpoint.channel_values).toMatchObject({ count: 111 });

        expect(await store.deleteCase("cp")).toBe(true);
        expect(await store.checkpointer().getTuple(cfg)).toBeUndefined();
        expect(await second.checkpointer().getTuple(cfg)).toBeUndefined();
        const history = [];
        for await (const t of store.checkpointer().list(cfg)) history.push(t);
        expect(history).toEqual([]);
        expect((await graph.getState(otherCfg)).values).toEqual({ count: 16 });
      });

      it("pruneCheckpoints drops one case's checkpoints and keeps the case and the others", async () => {
        const graph = new StateGraph(Counter)
          .addNode("one", async () => ({ count: 1 }))
          .addEdge(START, "one")
          .addEdge("one", END)
          .compile({ checkpointer: store.checkpointer() });
        await store.createCase(makeNewCase("pr"));
        await store.createCase(makeNewCase("pr-other"));
        const cfg = { configurable: { thread_id: "pr" } };
        const otherCfg = { configurable: { thread_id: "pr-other" } };
        await graph.invoke({ count: 1 }, cfg);
        await graph.invoke({ count: 2 }, otherCfg);
        await store.saveResult("pr", makeResult("pr"), null);

        await store.pruneCheckpoints("pr");
        expect(await store.checkpointer().getTuple(cfg)).toBeUndefined();
        const history = [];
        for await (const t of store.checkpointer().list(cfg)) history.push(t);
        expect(history).toEqual([]);
        expect((await store.getCase("pr"))?.status).toBe("completed");
        expect((await graph.getState(otherCfg)).values).toEqual({ count: 3 });
        // Pruning a case without checkpoints, or twice, is harmless.
        await store.pruneCheckpoints("pr");
        await store.pruneCheckpoints("never-existed");
      });
    });

    describe("lifecycle", () => {
      it("keeps everything across close and reopen", async () => {
        const img = makeImage("durable");
        await store.putImage(img);
        await store.createCase(makeNewCase("dur", { idempotencyKey: "dk" }, [img]));
        await store.appendEvent("dur", "status", { status: "running" });
        await store.saveResult("dur", makeResult("dur"), { nodes: [], edges: [] });
        await store.putCachedResponse("ck", { v: 1 });
        const before = await store.getCase("dur");
        await store.close();

        const again = await h.reopen();
        expect(await again.getCase("dur")).toEqual(before);
        expect((await again.findByIdempotencyKey("owner-a", "dk"))?.id).toBe("dur");
        expect((await again.listEvents("dur")).map((e) => [e.seq, e.type])).toEqual([[1, "status"]]);
        expect((await again.appendEvent("dur", "final", {})).seq).toBe(2);
        expect((await again.getImage(img.sha256))?.data).toBe(img.data);
        expect((await again.getCachedResponse("ck"))?.value).toEqual({ v: 1 });
      });

      it("pings while open; close is idempotent and later calls fail with STORE_FAILED", async () => {
        await expect(store.ping()).resolves.toBeUndefined();
        await store.close();
        await store.close();
        await expectCode(store.ping(), "STORE_FAILED");
        await expectCode(store.getCase("x"), "STORE_FAILED");
      });

      it("init is idempotent on an already initialised location", async () => {
        await store.createCase(makeNewCase("keep"));
        await store.init();
        const other = await h.reopen();
        await other.init();
        expect((await other.getCase("keep"))?.id).toBe("keep");
      });

      it("sees writes from another store object on the same location", async () => {
        const other = await h.reopen();
        await store.createCase(makeNewCase("shared-1"));
        await other.appendEvent("shared-1", "status", { from: "other" });
        await store.appendEvent("shared-1", "status", { from: "first" });
        expect((await other.listEvents("shared-1")).map((e) => [e.seq, e.data])).toEqual([
          [1, { from: "other" }],
          [2, { from: "first" }],
        ]);
      });
    });

    describe("conversation turns", () => {
      const turn = (n: number, over: Partial<NewTurn> = {}): NewTurn => ({
        turn: n,
        question: `Question ${n} — “naïve” 漢字`,
        answer: `Answer ${n} with "quotes" and \\ backslash`,
        step: n === 1 ? "image-quality" : null,
        category: n === 1 ? "high" : null,
        contextConflict: n === 3,
        evidence: [{ id: "f:0123456789ab", label: "effusion" }],
        details: { hd: { hallucinationDetected: false }, nested: [1, null, "x"] },
        ...over,
      });

      it("stores turns in order, round-trips every field, and lists none for a case without turns", async () => {
        await store.createCase(makeNewCase("conv"));
        expect(await store.listTurns("conv")).toEqual([]);
        const t2 = await store.addTurn("conv", turn(2));
        const t1 = await store.addTurn("conv", turn(1));
        await store.addTurn("conv", turn(3));
        const listed = await store.listTurns("conv");
        expect(listed.map((t) => t.turn)).toEqual([1, 2, 3]);
        expect(listed[0]).toEqual(t1);
        expect(listed[1]).toEqual(t2);
        expect(listed[0]).toMatchObject({ caseId: "conv", ...turn(1) });
        expect(listed[2]!.contextConflict).toBe(true);
        expect(Number.isNaN(Date.parse(listed[0]!.at))).toBe(false);
      });

      it("the same turn number twice is CONFLICT; a missing case is NOT_FOUND", async () => {
        await store.createCase(makeNewCase("conv-dup"));
        await store.addTurn("conv-dup", turn(1));
        await expectCode(store.addTurn("conv-dup", turn(1, { answer: "other" })), "CONFLICT");
        expect((await store.listTurns("conv-dup")).map((t) => t.answer)).toEqual([turn(1).answer]);
        await expectCode(store.addTurn("no-such-case", turn(1)), "NOT_FOUND");
        expect(await store.listTurns("no-such-case")).toEqual([]);
      });

      it("turns are seen by another store object and go with their case", async () => {
        await store.createCase(makeNewCase("conv-del"));
        await store.addTurn("conv-del", turn(1));
        const other = await h.reopen();
        expect((await other.listTurns("conv-del")).map((t) => t.question)).toEqual([turn(1).question]);
        expect(await store.deleteCase("conv-del")).toBe(true);
        expect(await other.listTurns("conv-del")).toEqual([]);
      });
    });
    describe("used token ids", () => {
      const now = 1_800_000_000_000;

      it("a token id is usable once until it expires, per issuer, and another store object sees the use", async () => {
        expect(await store.useTokenId("https://ehr-a", "jti-1", now + 60_000, now)).toBe(true);
        expect(await store.useTokenId("https://ehr-a", "jti-1", now + 60_000, now + 1)).toBe(false);
        expect(await store.useTokenId("https://ehr-b", "jti-1", now + 60_000, now)).toBe(true);
        const other = await h.reopen();
        expect(await other.useTokenId("https://ehr-a", "jti-1", now + 60_000, now + 2)).toBe(false);
        expect(await other.useTokenId("https://ehr-a", "jti-2", now + 60_000, now + 2)).toBe(true);
      });

      it("an expired record is pruned, so the id is free again after its expiry and not before", async () => {
        expect(await store.useTokenId("iss", "short", now + 1_000, now)).toBe(true);
        expect(await store.useTokenId("iss", "short", now + 5_000, now + 999)).toBe(false);
        expect(await store.useTokenId("iss", "short", now + 5_000, now + 1_000)).toBe(true);
        expect(await store.useTokenId("iss", "short", now + 5_000, now + 4_999)).toBe(false);
      });

      it("of many concurrent uses of one id across two store objects, exactly one succeeds", async () => {
        const other = await h.reopen();
        const tries = Array.from({ length: 12 }, (_, i) => (i % 2 ? other : store).useTokenId("iss", "raced", now + 60_000, now));
        const results = await Promise.all(tries);
        expect(results.filter(Boolean)).toHaveLength(1);
      });
    });
  });
}
