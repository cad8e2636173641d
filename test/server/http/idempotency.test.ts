// Uses app.inject: Idempotency-Key replay, 409 and 422 are request/response contracts; no socket needed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { chestPain, json, KEY_B, until } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";
import { pngWithCanvas } from "../../../src/scripted/image-bytes.js";

let t: InjectServer;
beforeAll(async () => {
  t = await startInjectServer();
});
afterAll(() => t.close());

function post(body: unknown, key: string, extra: Record<string, string> = {}, apiKey?: string) {
  return t.api("/diagnose", { method: "POST", json: body, headers: { "idempotency-key": key, ...extra }, ...(apiKey ? { key: apiKey } : {}) });
}

async function caseCount(apiKey?: string): Promise<number> {
  return (await json<{ items: unknown[] }>(await t.api("/cases?limit=100", apiKey ? { key: apiKey } : {}))).items.length;
}

describe("Idempotency-Key on POST /diagnose", () => {
  it("same key and body: the stored case again, with no new model calls", async () => {
    const first = await post(chestPain(), "idem-replay-1");
    expect(first.status).toBe(201);
    const original = DiagnosisResult.parse(await first.json());
    const calls = t.openai.stats().total;
    const cases = await caseCount();

    // Key order and whitespace in the JSON do not make it a different request.
    const { question, ...rest } = chestPain();
    const again = await t.api("/diagnose", {
      method: "POST",
      headers: { "idempotency-key": "idem-replay-1", "content-type": "application/json" },
      body: JSON.stringify({ ...rest, question }, null, 2),
    });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(`/cases/${original.caseId}`);
    expect(DiagnosisResult.parse(await again.json())).toEqual(original);

    const asyncAgain = await post(chestPain(), "idem-replay-1", { prefer: "respond-async" });
    expect(asyncAgain.status).toBe(202);
    expect(await asyncAgain.json()).toMatchObject({ caseId: original.caseId, status: "completed" });

    expect(t.openai.stats().total).toBe(calls);
    expect(await caseCount()).toBe(cases);
  });

  it("same key, different body: 422", async () => {
    expect((await post(chestPain(), "idem-diff-1")).status).toBe(201);
    const calls = t.openai.stats().total;
    const res = await post(chestPain({ notes: "A different patient entirely." }), "idem-diff-1");
    expect(res.status).toBe(422);
    const body = await json<{ code: string; message: string }>(res);
    expect(body.code).toBe("UNPROCESSABLE");
    expect(body.message).toMatch(/already used with a different request body/);
    // Different pipeline settings are a different request too.
    expect((await t.api("/diagnose?k=2", { method: "POST", json: chestPain(), headers: { "idempotency-key": "idem-diff-1" } })).status).toBe(422);
    expect(t.openai.stats().total).toBe(calls);
  });

  it("same key while the first request is still running: 409", async () => {
    t.openai.setLatency(400);
    try {
      const first = await post(chestPain(), "idem-running-1", { prefer: "respond-async" });
      expect(first.status).toBe(202);
      const { caseId } = await json<{ caseId: string }>(first);
      const res = await post(chestPain(), "idem-running-1");
      expect(res.status).toBe(409);
      const body = await json<{ code: string; message: string; details: { caseId: string } }>(res);
      expect(body.code).toBe("CONFLICT");
      expect(body.message).toMatch(/still being processed/);
      expect(body.details.caseId).toBe(caseId);
      await until(async () => ((await json<{ status: string }>(await t.api(`/cases/${caseId}`))).status === "completed" ? true : undefined), 15_000, "first case");
      // once it is done, the same request replays it
      const replay = await post(chestPain(), "idem-running-1");
      expect(replay.status).toBe(201);
      expect(DiagnosisResult.parse(await replay.json()).caseId).toBe(caseId);
    } finally {
      t.openai.setLatency(0);
    }
  });

  it("concurrent requests with one key create one case", async () => {
    t.openai.setLatency(300);
    try {
      const before = await caseCount();
      const results = await Promise.all([0, 1, 2].map(() => post(chestPain(), "idem-race-1", { prefer: "respond-async" })));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([202, 409, 409]);
      expect(await caseCount()).toBe(before + 1);
    } finally {
      t.openai.setLatency(0);
    }
  });

  it("keys are scoped to the API key, and JSON and multipart uploads of the same case match", async () => {
    const png = pngWithCanvas(32, 32);
    const asJson = chestPain({ images: [{ id: "film", caption: "AP film", data: png.toString("base64") }] });
    const first = await post(asJson, "idem-shared-1");
    expect(first.status).toBe(201);
    const original = DiagnosisResult.parse(await first.json());

    const form = new FormData();
    form.set("case", JSON.stringify(chestPain({ images: [{ id: "film", caption: "AP film" } as never] })));
    form.set("film", new Blob([new Uint8Array(png)]), "film.png");
    const calls = t.openai.stats().total;
    const multipart = await t.api("/diagnose", { method: "POST", body: form, headers: { "idempotency-key": "idem-shared-1" } });
    expect(multipart.status).toBe(201);
    expect(DiagnosisResult.parse(await multipart.json()).caseId).toBe(original.caseId);
    expect(t.openai.stats().total).toBe(calls);

    const otherOwner = await post(asJson, "idem-shared-1", {}, KEY_B);
    expect(otherOwner.status).toBe(201);
    expect(DiagnosisResult.parse(await otherOwner.json()).caseId).not.toBe(original.caseId);
  });
});
