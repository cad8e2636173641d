// Uses app.inject: the shapes of FHIR error answers need no socket.
import type { OperationOutcome } from "fhir/r4.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureBundle } from "../../core/intake/fhir/fhir-fixtures.js";
import { operationOutcomeOnly } from "../../core/intake/fhir/real-shapes.js";
import { json } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

let t: InjectServer;
beforeAll(async () => {
  t = await startInjectServer();
});
afterAll(() => t.close());

const post = (body: unknown, contentType: string) => t.api("/diagnose", { method: "POST", headers: { "content-type": contentType }, body: JSON.stringify(body) });

describe("FHIR errors that help", () => {
  it("each issue's details.text is short and its own, however many issues", async () => {
    const b = fixtureBundle("stemi");
    for (let i = 0; i < 25; i++) b.entry.push({ resource: { resourceType: "Observation", id: `bad-${i}`, status: "final", code: { text: "x" }, valueQuantity: { value: `not a number ${i}` } } });
    const res = await post(b, "application/fhir+json");
    expect(res.status).toBe(400);
    const oo = await json<OperationOutcome>(res);
    expect(oo.issue.length).toBe(20);
    for (const i of oo.issue) {
      expect(i.details!.text!.length).toBeLessThanOrEqual(160);
      expect(i.details!.text).toBe(i.diagnostics);
    }
    expect(new Set(oo.issue.map((i) => i.expression![0])).size).toBe(20);
    expect(JSON.stringify(oo).length).toBeLessThan(20_000);
  });

  it.each(["application/json", "application/json; charset=utf-8"])("a Bundle sent as %s → 415 naming application/fhir+json", async (type) => {
    const res = await post(fixtureBundle("stemi"), type);
    expect(res.status).toBe(415);
    expect(JSON.stringify(await res.json())).toContain("application/fhir+json");
  });

  it("a Bundle sent as DSTU2's application/json+fhir → 415 naming application/fhir+json", async () => {
    const res = await post(fixtureBundle("stemi"), "application/json+fhir");
    expect(res.status).toBe(415);
    expect(JSON.stringify(await res.json())).toContain("application/fhir+json");
  });

  it("an OperationOutcome-only searchset → 422 OperationOutcome saying so; nothing is stored", async () => {
    const res = await post(operationOutcomeOnly(), "application/fhir+json");
    expect(res.status).toBe(422);
    const oo = await json<OperationOutcome>(res);
    expect(oo.resourceType).toBe("OperationOutcome");
    expect(oo.issue[0]!.diagnostics).toContain("holds only an OperationOutcome");
    expect(oo.issue[0]!.code).toBe("processing");
  });
});
