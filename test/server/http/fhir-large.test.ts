// A real socket: the point is what other requests see while one large bundle is read.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./http-harness.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

/** A synthetic record of ~24 MiB: thousands of laboratory Observations with a comment each (no real person). */
function largeBundleText(targetBytes: number): string {
  const parts: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < targetBytes; i++) {
    const comment = `Synthetic specimen comment ${i}: ${"haemolysed sample, repeat advised; ".repeat(28)}`;
    const obs = {
      resourceType: "Observation",
      id: `lab-${i}`,
      status: "final",
      category: [{ coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "laboratory" }] }],
      code: { coding: [{ system: "http://loinc.org", code: `${2000 + (i % 150)}-0`, display: `Synthetic analyte ${i % 150}` }] },
      subject: { reference: "Patient/synthetic-large" },
      effectiveDateTime: `20${String(10 + (i % 16)).padStart(2, "0")}-0${1 + (i % 9)}-1${i % 10}`,
      valueQuantity: { value: 3 + (i % 97) / 13, unit: "mmol/L", system: "http://unitsofmeasure.org", code: "mmol/L" },
      note: [{ text: comment }],
    };
    const s = JSON.stringify({ fullUrl: `https://fhir.example.org/r4/Observation/lab-${i}`, resource: obs, search: { mode: "match" } });
    parts.push(s);
    bytes += s.length + 1;
  }
  return `{"resourceType":"Bundle","type":"searchset","entry":[${parts.join(",")}]}`;
}

describe("a 25 MiB FHIR bundle does not stall the server", () => {
  it("/healthz keeps answering while the bundle is read", async () => {
    const body = largeBundleText(24 * 1024 * 1024);
    expect(body.length).toBeGreaterThan(24 * 1024 * 1024);
    let settled = false;
    const post = t
      .api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json", prefer: "respond-async" }, body })
      .finally(() => (settled = true));
    // Probes one after another: each must be answered before the next is sent. Were the
    // intake one block on the event loop, they would all wait for it and few would get in.
    let answeredDuring = 0;
    while (!settled) {
      const res = await t.api("/healthz", { key: null });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      if (!settled) answeredDuring++;
    }
    const res = await post;
    expect(res.status).toBe(202);
    // While the body uploads a few get in either way (7 here with a blocking intake); while it is read, dozens (55 here).
    expect(answeredDuring).toBeGreaterThanOrEqual(20);
  }, 120_000);
});
