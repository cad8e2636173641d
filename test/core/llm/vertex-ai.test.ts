import { describe, expect, it, vi } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { useVertexFront, WIF_AUDIENCE } from "../../support/vertex-adc.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { catalogEntry } from "../../../src/core/llm/model-catalog.js";
import { callCostUsd } from "../../../src/core/llm/usage.js";
import { asVertexError, VertexRequestError, VertexTransportError } from "../../../src/core/llm/vertex-chat-model.js";
import { causes } from "../../../src/core/contracts/errors.js";

/**
 * Gemini on Vertex AI (google-vertexai:…) through LangChain's own integration
 * (@langchain/google-vertexai ChatVertexAI and google-auth-library), against the scripted
 * server's Vertex AI routes over TLS: the credentials come from the standard ADC chain
 * (GOOGLE_APPLICATION_CREDENTIALS naming a workload-identity-federation file, whose OIDC token
 * is exchanged at the token URL), every request carries the access token, and an expired token
 * is exchanged again instead of failing the service after its first hour.
 */
const servers = useScriptedServers();
const FLASH = "google-vertexai:gemini-2.5-flash";
// The ADC chain reads the process environment, as on a host. A Gemini API key in reach must not divert the calls to it.
const tls = useVertexFront(() => servers.model.vendors, { GOOGLE_API_KEY: "a-gemini-api-key-that-vertex-must-not-use" });

function vertexConfig(env: Record<string, string> = {}) {
  return servers.config({
    MEDMMV_MODEL: FLASH,
    MEDMMV_JUDGE_MODEL: FLASH,
    GOOGLE_CLOUD_PROJECT: "hospital-project",
    GOOGLE_CLOUD_LOCATION: "europe-west4",
    MEDMMV_VERTEX_ENDPOINT: tls.front.host,
    ...env,
  });
}

async function runCase(id: string, env: Record<string, string> = {}, k = 3) {
  const cfg = vertexConfig(env);
  const { result } = await new Pipeline(cfg).run(chestPainCase(id), pipelineOptions(cfg, { k }));
  return result;
}

describe("Vertex AI (google-vertexai:…) through ChatVertexAI", () => {
  it("a whole case runs on generateContent with an ADC access token, priced from the catalog's Vertex AI table", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const result = await runCase("case-vertex");
    expect(() => DiagnosisResult.parse(result)).not.toThrow();
    expect(result.status).toBe("completed");
    expect(result.answer?.option).toBe("B");
    const vertex = servers.model.vendors.vertex;
    // One token exchange, of the workload's own OIDC token, for the whole case (every role and temperature share it).
    expect(vertex.tokenExchanges()).toEqual([{ status: 200, subjectToken: tls.adc.subjectToken, subjectTokenType: "urn:ietf:params:oauth:token-type:jwt", audience: WIF_AUDIENCE, scope: "https://www.googleapis.com/auth/cloud-platform", issued: "ya29.scripted-1" }]);
    const calls = vertex.calls();
    expect(calls).toHaveLength(result.usage.llmCalls);
    for (const c of calls) {
      expect(c).toMatchObject({ project: "hospital-project", location: "europe-west4", model: "gemini-2.5-flash", status: 200, token: "ya29.scripted-1", tokenValid: true, structured: "responseSchema" });
    }
    // Nothing went to the Gemini API with the key in reach.
    expect(servers.model.vendors.gemini.calls()).toHaveLength(0);
    const price = catalogEntry(FLASH)!.price!;
    expect(price.input).toBeGreaterThan(0);
    expect(result.usage.costUsd).toBeCloseTo(callCostUsd(price, result.usage.promptTokens, 0, result.usage.completionTokens), 6);
    expect(result.usage.unpricedCalls ?? 0).toBe(0);
  });

  it("a token the server holds expired is exchanged again and the refused request sent once more; none with the expired token succeeds", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const vertex = servers.model.vendors.vertex;
    expect((await runCase("case-vertex-first-hour")).status).toBe("completed");
    expect(vertex.tokenExchanges().map((e) => e.issued)).toEqual(["ya29.scripted-1"]);
    const before = vertex.calls().length;
    // The hour is up, as Google's server sees it (the client still holds the token as valid: a host clock that runs late).
    vertex.expireTokens();
    const second = await runCase("case-vertex-next-hour");
    expect(second.status).toBe("completed");
    const exchanges = vertex.tokenExchanges();
    expect(exchanges.length).toBeGreaterThanOrEqual(2);
    expect(exchanges.every((e) => e.status === 200)).toBe(true);
    const after = vertex.calls().slice(before);
    // The first requests after the hour met 401 with the old token; the rest went with a fresh one.
    expect(after.some((c) => c.token === "ya29.scripted-1" && c.status === 401)).toBe(true);
    const fresh = exchanges.slice(1).map((e) => e.issued);
    expect(after.filter((c) => c.status === 200).length).toBe(second.usage.llmCalls);
    for (const c of after.filter((c) => c.status === 200)) expect(fresh).toContain(c.token);
    // Over both cases: no request with an expired or unknown token was answered.
    for (const c of vertex.calls()) if (!c.tokenValid) expect(c.status).toBe(401);
  });

  it("a token that expires within the client's refresh margin is exchanged before it is used, never sent stale", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const vertex = servers.model.vendors.vertex;
    // 60 s is inside google-auth-library's 5-minute eager-refresh margin: each token is already "expiring" when it comes.
    vertex.tokenLifetimeSec = 60;
    const result = await runCase("case-vertex-short-tokens", {}, 1);
    expect(result.status).toBe("completed");
    expect(vertex.tokenExchanges().length).toBeGreaterThanOrEqual(2);
    expect(vertex.calls().every((c) => c.status === 200 && c.tokenValid)).toBe(true);
  });

  it("a google-vertexai:… model without a project is a configuration error naming GOOGLE_CLOUD_PROJECT, never a call", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const cfg = servers.config({ MEDMMV_MODEL: FLASH, MEDMMV_JUDGE_MODEL: FLASH, MEDMMV_VERTEX_ENDPOINT: tls.front.host });
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-vertex-noproject"), pipelineOptions(cfg, { k: 1 }));
    expect(result.status).toBe("failed");
    expect(JSON.stringify(result.provenance.failures ?? result.error)).toMatch(/GOOGLE_CLOUD_PROJECT/);
    expect(servers.model.vendors.vertex.calls()).toHaveLength(0);
    expect(servers.model.vendors.vertex.tokenExchanges()).toHaveLength(0);
  });
});

describe("Vertex AI's refusals, typed with its own reasons", () => {
  it("credentials the token exchange refuses: a failure naming GOOGLE_APPLICATION_CREDENTIALS, not retried, and no model call", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    servers.model.vendors.vertex.refuseExchanges = "The audience in ID Token [https://aks.hospital.example] does not match the expected audience.";
    const result = await runCase("case-vertex-bad-credentials", {}, 1);
    expect(result.status).toBe("failed");
    const failures = result.provenance.failures ?? [];
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) expect(f.message).toMatch(/GOOGLE_APPLICATION_CREDENTIALS/);
    expect(servers.model.vendors.vertex.calls()).toHaveLength(0);
    // At most one refused exchange per failed call (calls at the same moment share one): none retried.
    const exchanges = servers.model.vendors.vertex.tokenExchanges();
    expect(exchanges.length).toBeGreaterThan(0);
    expect(exchanges.length).toBeLessThanOrEqual(failures.length);
    expect(exchanges.every((e) => e.status === 400)).toBe(true);
  });

  it("a prompt its safety filters block: CONTENT_FILTERED naming the category, not retried", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    servers.model.vendors.vertex.blockPrompts = "HARM_CATEGORY_DANGEROUS_CONTENT";
    const result = await runCase("case-vertex-safety", {}, 1);
    expect(result.status).toBe("failed");
    const filtered = (result.provenance.failures ?? []).filter((f) => f.code === "CONTENT_FILTERED");
    expect(filtered.length).toBeGreaterThan(0);
    expect(filtered[0]!.message).toMatch(/Google's safety filters/);
    expect(filtered[0]!.message).toMatch(/HARM_CATEGORY_DANGEROUS_CONTENT/);
    // Each refused call was sent once: a block is not a transient failure.
    const calls = servers.model.vendors.vertex.calls();
    expect(calls.length).toBe(filtered.length);
  });

  it("400 INVALID_ARGUMENT for a prompt over the window: CONTEXT_TOO_LONG with both sizes, not retried", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const body = JSON.stringify({ error: { code: 400, message: "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).", status: "INVALID_ARGUMENT" } });
    servers.model.addFault({ kind: "status", status: 400, body });
    const result = await runCase("case-vertex-context", {}, 1);
    expect(result.status).toBe("failed");
    const tooLong = (result.provenance.failures ?? []).filter((f) => f.code === "CONTEXT_TOO_LONG");
    expect(tooLong.length).toBeGreaterThan(0);
    expect(tooLong[0]!.message).toMatch(/1200293 tokens/);
    expect(tooLong[0]!.message).toMatch(/1048576 tokens/);
    expect(servers.model.vendors.vertex.calls().length).toBe(tooLong.length);
  });

  function resourceExhausted(retryDelay: string): string {
    return JSON.stringify({
      error: {
        code: 429,
        message: "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.",
        status: "RESOURCE_EXHAUSTED",
        details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay }],
      },
    });
  }

  it("429 RESOURCE_EXHAUSTED is a rate limit: retried, and the case completes", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    servers.model.addFault({ kind: "status", status: 429, body: resourceExhausted("0.02s"), times: 2 });
    const result = await runCase("case-vertex-429", {}, 1);
    expect(result.status).toBe("completed");
    const calls = servers.model.vendors.vertex.calls();
    expect(calls.filter((c) => c.status === 429)).toHaveLength(2);
    expect(calls.filter((c) => c.status === 200)).toHaveLength(result.usage.llmCalls);
  });

  it("429 RESOURCE_EXHAUSTED's retryDelay is read: a wait past MEDMMV_LLM_MAX_RETRY_AFTER_MS fails at once, naming it, instead of being retried early", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    servers.model.addFault({ kind: "status", status: 429, body: resourceExhausted("90s") });
    const result = await runCase("case-vertex-429-long", { MEDMMV_LLM_MAX_RETRY_AFTER_MS: "30000" }, 1);
    expect(result.status).toBe("failed");
    const failures = result.provenance.failures ?? [];
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) expect(f.message).toMatch(/retry after 90 s, beyond the 30 s budget/);
    // Each call was sent once: none came back before the 90 s Google asked for.
    expect(servers.model.vendors.vertex.calls()).toHaveLength(failures.length);
  });

  it("an attempt past MEDMMV_LLM_TIMEOUT_MS is aborted on the wire (the request closed, not left open) and retried", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    servers.model.addFault({ kind: "hang", times: 1 });
    const result = await runCase("case-vertex-timeout", { MEDMMV_LLM_TIMEOUT_MS: "400" }, 1);
    expect(result.status).toBe("completed");
    // The hung request's connection was closed by our abort: nothing stays in flight on the server.
    await vi.waitFor(() => expect(servers.model.stats().inFlight).toBe(0));
    expect(servers.model.stats().disconnects).toBeGreaterThanOrEqual(1);
  });
});

describe("asVertexError", () => {
  const PROMPT = "A 58-year-old man presents with crushing substernal chest pain";
  /** The integration's error as @langchain/google-common throws it: the gaxios reply, and the request (its body: the prompt) on it. */
  function integrationError(status: number | null, data: unknown): Error {
    const request = { url: "https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent", body: JSON.stringify({ contents: [{ parts: [{ text: PROMPT }] }] }) };
    const e = new Error(status === null ? "request to the endpoint failed, reason: connect ECONNREFUSED" : `Google request failed with status code ${status}`) as Error & Record<string, unknown>;
    if (status !== null) e.response = { status, data, headers: new Headers(), url: request.url, config: request };
    else e.code = "ECONNREFUSED";
    e.details = { url: request.url, opts: { data: request.body } };
    e.config = request;
    return e;
  }
  function carriesPrompt(err: unknown): boolean {
    return [...causes(err)].some((e) => JSON.stringify(e, Object.getOwnPropertyNames(e)).includes("substernal"));
  }

  it("a refusal keeps Google's status, reason and stated wait, and nothing of the request", () => {
    const body = JSON.stringify({ error: { code: 429, message: "Resource exhausted. Please try again later.", status: "RESOURCE_EXHAUSTED", details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" }] } });
    const out = asVertexError(integrationError(429, body));
    expect(out).toBeInstanceOf(VertexRequestError);
    expect(out).toMatchObject({ status: 429, error: { status: "RESOURCE_EXHAUSTED" }, headers: { "retry-after-ms": "7000" } });
    expect(carriesPrompt(out)).toBe(false);
  });

  it("a network failure keeps its system error code (what names the fix), and nothing of the request", () => {
    const out = asVertexError(integrationError(null, undefined));
    expect(out).toBeInstanceOf(VertexTransportError);
    expect(out).toMatchObject({ code: "ECONNREFUSED" });
    expect(carriesPrompt(out)).toBe(false);
  });
});
