import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { chestPain, json, readSse, startTestServer, type TestServer } from "./http-harness.js";
import { pngWithCanvas } from "../../../src/scripted/image-bytes.js";

/**
 * Patient data must never reach the logs. A canary string goes into every free-text
 * field a client can send (and so into the model's replies, which quote the notes); after
 * exercising every route, including the error paths, no log line may contain it.
 */
const CANARY = "ZEBRA-CANARY-7F3A9";

let t: TestServer;
const consoleSpies: MockInstance[] = [];
beforeAll(async () => {
  for (const m of ["log", "info", "warn", "error", "debug"] as const) consoleSpies.push(vi.spyOn(console, m));
  t = await startTestServer({ env: { MEDMMV_LOG_LEVEL: "trace", MEDMMV_MAX_IMAGE_BYTES: "4096" } });
});
afterAll(async () => {
  await t.close();
  for (const s of consoleSpies) s.mockRestore();
});

const canaryCase = () =>
  chestPain({
    id: `id-${CANARY}`.slice(0, 40).replace(/[^A-Za-z0-9._:-]/g, ""),
    question: `Which diagnosis fits ${CANARY} best?`,
    notes: `Patient ${CANARY} has had chest pain for 40 minutes. Crushing substernal pressure. ECG shows ST elevation in leads II, III and aVF.`,
    options: { A: `Pericarditis ${CANARY}`, B: "Inferior myocardial infarction", C: "Aortic dissection" },
    patient: { age: 58, sex: `male ${CANARY}` },
    metadata: { ward: CANARY },
    images: [{ id: "ecg", caption: `ECG of ${CANARY}`, data: pngWithCanvas(16, 16).toString("base64") }],
  });

describe("logs carry no patient data", () => {
  it("no route, success or failure, logs the canary", async () => {
    // success paths: JSON (sync), multipart (async), reads, SSE, evidence graph, delete
    const res = await t.api("/diagnose", { method: "POST", json: canaryCase(), headers: { "idempotency-key": "canary-1" } });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    // the canary really went through the model and back (the scripted clinician quotes the notes)
    expect(JSON.stringify(result).toLowerCase()).toContain(CANARY.toLowerCase());
    const form = new FormData();
    form.set("case", JSON.stringify({ ...canaryCase(), images: [{ id: "ecg", caption: `ECG of ${CANARY}` }] }));
    form.set("ecg", new Blob([new Uint8Array(pngWithCanvas(16, 16))]), `${CANARY}.png`);
    const mp = await t.api("/diagnose", { method: "POST", body: form, headers: { prefer: "respond-async" } });
    expect(mp.status).toBe(202);
    const mpId = (await json<{ caseId: string }>(mp)).caseId;
    await readSse(await t.api(`/cases/${mpId}/events`));
    expect((await t.api(`/cases/${result.caseId}`)).status).toBe(200);
    expect((await t.api("/cases")).status).toBe(200);
    expect((await t.api(`/cases/${result.caseId}/evidence-graph?scope=full&format=cytoscape`)).status).toBe(200);
    await readSse(await t.api(`/cases/${result.caseId}/events`));

    // error paths: they are where bodies tend to leak (parser messages, validation values)
    const errors: Array<[RequestInit & { json?: unknown; key?: string | null }, number]> = [
      [{ method: "POST", headers: { "content-type": "application/json" }, body: `{"question": "${CANARY}` }, 400],
      [{ method: "POST", headers: { "content-type": "application/json" }, body: `{"question": ${CANARY}}` }, 400],
      [{ method: "POST", json: { ...canaryCase(), [CANARY]: CANARY } }, 400],
      [{ method: "POST", json: { ...canaryCase(), options: { [CANARY]: CANARY } } }, 400],
      [{ method: "POST", json: { ...canaryCase(), images: [{ id: "x", caption: CANARY, data: Buffer.from(`${CANARY} not an image`).toString("base64") }] } }, 415],
      [{ method: "POST", json: { ...canaryCase(), images: [{ id: "x", caption: CANARY, data: Buffer.alloc(8000, 1).toString("base64") }] } }, 413],
      [{ method: "POST", json: { ...canaryCase(), notes: `different ${CANARY}` }, headers: { "idempotency-key": "canary-1" } }, 422],
      [{ method: "POST", headers: { "content-type": "text/plain" }, body: CANARY }, 415],
      [{ method: "POST", json: canaryCase(), key: `${CANARY}-key` }, 401],
    ];
    for (const [init, status] of errors) expect((await t.api("/diagnose", init)).status).toBe(status);
    expect((await t.api(`/cases/${result.caseId}`, { method: "DELETE" })).status).toBe(204);

    const logs = t.logs.text();
    expect(logs.length).toBeGreaterThan(1000); // the capture works…
    expect(logs).toContain(result.caseId); // …and holds what an operator needs
    expect(logs.toLowerCase()).not.toContain(CANARY.toLowerCase());
    for (const spy of consoleSpies) expect(JSON.stringify(spy.mock.calls).toLowerCase()).not.toContain(CANARY.toLowerCase());

    const lines = t.logs.lines();
    const requestLines = lines.filter((l) => l.msg === "incoming request" || l.msg === "request completed");
    expect(requestLines.length).toBeGreaterThanOrEqual(2 * 15);
    expect(requestLines.every((l) => typeof l.reqId === "string" && (l.reqId as string).length > 0)).toBe(true);
    expect(lines.filter((l) => l.msg === "request rejected").map((l) => l.statusCode)).toEqual(expect.arrayContaining([400, 401, 413, 415, 422]));
  });

  it("keeps a caller's x-request-id only when it is a UUID or a hex trace id, and replaces anything that could carry text", async () => {
    for (const kept of ["4bf92f3577b34da6a3ce929d0e0e4736", "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"]) {
      const ok = await t.api("/healthz", { key: null, headers: { "x-request-id": kept } });
      expect(ok.headers.get("x-request-id")).toBe(kept);
      expect(t.logs.text()).toContain(kept);
    }
    for (const unsafe of [`${CANARY} with spaces`, CANARY, `trace-${CANARY}`, "a".repeat(200)]) {
      const bad = await t.api("/healthz", { key: null, headers: { "x-request-id": unsafe } });
      expect(bad.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(t.logs.text().toLowerCase()).not.toContain(CANARY.toLowerCase());
  });
});
