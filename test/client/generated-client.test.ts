import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientTypes, openApiDocument } from "../../scripts/generate-client.js";
import { createMedmmvClient } from "../../src/client/medmmv-client.js";
import { chestPain, KEY_A, readSse, startTestServer, type TestServer } from "../server/http/http-harness.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

describe("the generated client (openapi-typescript + openapi-fetch)", () => {
  it("drives a case end to end: diagnose async → events → result → evidence graph", async () => {
    const client = createMedmmvClient(t.base, KEY_A);
    const submitted = await client.POST("/diagnose", { body: chestPain(), params: { header: { prefer: "respond-async" } } });
    expect(submitted.response.status).toBe(202);
    if (!submitted.data || !("events" in submitted.data)) throw new Error(`expected CaseAccepted, got ${JSON.stringify(submitted.error ?? submitted.data)}`);
    const { caseId } = submitted.data;

    const stream = await client.GET("/cases/{id}/events", { params: { path: { id: caseId } }, parseAs: "stream" });
    expect(stream.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const { events } = await readSse(stream.response);
    expect(events.at(-1)!.data.data).toMatchObject({ status: "completed" });

    const got = await client.GET("/cases/{id}", { params: { path: { id: caseId } } });
    expect(got.data?.status).toBe("completed");
    expect(got.data?.result?.answer?.option).toBe("B");

    const graph = await client.GET("/cases/{id}/evidence-graph", { params: { path: { id: caseId }, query: { scope: "full", format: "graphology" } } });
    expect(Array.isArray((graph.data as { nodes?: unknown[] }).nodes)).toBe(true);
    expect(((graph.data as { nodes: unknown[] }).nodes).length).toBeGreaterThan(0);

    // Errors are typed too: another key's case is a 404 ErrorBody.
    const other = await createMedmmvClient(t.base, "test-key-bravo-9876543210abcdefghij").GET("/cases/{id}", { params: { path: { id: caseId } } });
    expect(other.response.status).toBe(404);
    expect(other.error?.code).toBe("NOT_FOUND");
  });

  it("the committed openapi.json and client types are what the server describes now (npm run client:generate)", async () => {
    const doc = await openApiDocument();
    expect(JSON.parse(await readFile(path.join(root, "openapi.json"), "utf8"))).toEqual(doc);
    expect(await readFile(path.join(root, "src/client/openapi-types.ts"), "utf8")).toBe(await clientTypes(doc));
  });
});
