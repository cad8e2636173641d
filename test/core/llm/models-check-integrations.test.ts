import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { scriptedOrigin } from "../../../src/scripted/scripted-vendor-routes.js";
import { checkModel } from "../../../src/core/llm/model-probe.js";
import { closedPort } from "../../support/closed-port.js";

/**
 * `models check` for models reached through their providers' own LangChain integrations
 * (providers/*.ts): the real `@langchain/anthropic`, `@langchain/google-genai` and `@langchain/aws`
 * clients against the scripted server's Messages, generateContent and Converse endpoints.
 */
const servers = useScriptedServers({ scenario: { agents: { "models-check": { ok: true } } } });

const SONNET = "anthropic:claude-sonnet-4-5";
const FLASH = "google-genai:gemini-2.5-flash";
const BEDROCK = "bedrock:anthropic.claude-3-5-sonnet-20241022-v2:0";

function check(model: string, env: Record<string, string> = {}) {
  const origin = scriptedOrigin(servers.model.baseUrl);
  const cfg = servers.config({
    MEDMMV_MODEL: model,
    MEDMMV_JUDGE_MODEL: model,
    ANTHROPIC_API_KEY: "sk-ant-scripted",
    ANTHROPIC_BASE_URL: origin,
    GOOGLE_API_KEY: "g-scripted",
    GOOGLE_GENAI_BASE_URL: origin,
    AWS_REGION: "us-east-1",
    MEDMMV_BEDROCK_ENDPOINT: origin,
    ...env,
  });
  return checkModel(cfg.llm, model);
}

beforeEach(() => {
  // The AWS SDK's default credential chain reads the process environment, as it would on a host.
  vi.stubEnv("AWS_ACCESS_KEY_ID", "AKIASCRIPTEDKEY0001");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "scripted-secret-access-key");
  vi.stubEnv("AWS_PROFILE", "");
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe("models check through a provider's own integration", () => {
  it("Anthropic: probed on the Messages API; JSON by the forced tool; images; a window the long probe fits in", async () => {
    const c = await check(SONNET);
    expect(c).toMatchObject({
      model: SONNET,
      provider: "anthropic",
      via: "integration",
      problem: null,
      temperature: true,
      structuredOutput: { jsonSchema: null, functionCalling: true, jsonMode: null },
      imagesPerRequest: null,
      contextWindow: { tokens: null, truncates: false },
      reasoning: null,
      tokenParameter: null,
      // Its calls are not built to a profile: nothing to write back, and its one JSON method works.
      settings: {},
    });
    const calls = servers.model.vendors.anthropic.calls();
    // plain, temperature, tool, one image, two images, the long prompt: every one a Messages request.
    expect(c.requests).toBe(6);
    expect(calls).toHaveLength(6);
    expect(calls.every((x) => x.status === 200 && x.model === "claude-sonnet-4-5" && x.apiKey === "sk-ant-scripted")).toBe(true);
    expect(calls.map((x) => x.images)).toEqual([0, 0, 0, 1, 2, 0]);
    expect(calls[2]!.content).toEqual(["tool_use"]);
  });

  it("Gemini: both ways its integration asks for JSON (responseSchema and a forced function call) are tried", async () => {
    const c = await check(FLASH);
    expect(c).toMatchObject({ provider: "google-genai", problem: null, temperature: true, structuredOutput: { jsonSchema: true, functionCalling: true, jsonMode: null }, imagesPerRequest: null, settings: {} });
    expect(servers.model.vendors.gemini.calls()).toHaveLength(7);
  });

  it("Bedrock: probed on the Converse API, every request SigV4-signed with the chain's credentials", async () => {
    const c = await check(BEDROCK);
    expect(c).toMatchObject({ provider: "bedrock", problem: null, structuredOutput: { jsonSchema: null, functionCalling: true, jsonMode: null }, imagesPerRequest: null, contextWindow: { truncates: false } });
    const calls = servers.model.vendors.bedrock.calls();
    expect(calls).toHaveLength(6);
    expect(calls.every((x) => x.status === 200 && x.accessKeyId === "AKIASCRIPTEDKEY0001" && x.region === "us-east-1")).toBe(true);
    expect(calls.some((x) => x.structured === "toolUse")).toBe(true);
  });

  it("a Bedrock model that refuses images is written back as a profile with imagesPerRequest: 0, which its calls then obey", async () => {
    // A text-only model on Bedrock refuses the image block with a ValidationException (400).
    servers.model.addFault({ kind: "status", status: 400, body: JSON.stringify({ error: { message: "This model doesn't support the image content block that you provided." } }), agent: "models-check", textIncludes: "if you can see" });
    const c = await check(BEDROCK);
    expect(c).toMatchObject({ problem: null, imagesPerRequest: 0 });
    expect(JSON.parse(c.settings.MEDMMV_MODEL_PROFILES!)).toEqual({ [BEDROCK]: { imagesPerRequest: 0 } });
  });

  it("a transient failure (Anthropic's 529 overloaded) is asked again before it is read as a missing capability", async () => {
    // The third request is the forced tool call.
    servers.model.addFault({ kind: "status", status: 529, agent: "models-check", callIndex: 2, times: 1 });
    const c = await check(SONNET);
    expect(c.structuredOutput).toEqual({ jsonSchema: null, functionCalling: true, jsonMode: null });
    expect(c.requests).toBe(7);
    expect(servers.model.vendors.anthropic.calls().map((x) => x.status)).toEqual([200, 200, 529, 200, 200, 200, 200]);
  });

  it("a window the server states in its refusal is the window reported (Gemini's INVALID_ARGUMENT)", async () => {
    // generateContent's refusal of a prompt over the window, as Gemini sends it
    // (google-gemini/gemini-cli#4118, #12098): 400, status INVALID_ARGUMENT, both counts in the message.
    const body = JSON.stringify({ error: { code: 400, message: "The input token count (6112) exceeds the maximum number of tokens allowed (4096).", status: "INVALID_ARGUMENT" } });
    servers.model.addFault({ kind: "status", status: 400, body, agent: "models-check", textIncludes: "long health-check text" });
    const c = await check(FLASH);
    expect(c).toMatchObject({ problem: null, contextWindow: { tokens: 4096, truncates: false } });
  });

  it("tells a refused credential and an unreachable endpoint apart from a missing capability after one request, naming what to check", async () => {
    // Bedrock's AccessDeniedException (403, the AWS SDK's $metadata.httpStatusCode).
    servers.model.addFault({ kind: "status", status: 403, agent: "models-check" });
    const denied = await check(BEDROCK);
    expect(denied).toMatchObject({ problem: { kind: "unauthorized" }, requests: 1, temperature: null, structuredOutput: null });
    expect(denied.problem?.message).toContain("AWS credential chain");
    servers.model.clearFaults();
    const port = await closedPort();
    const unreachable = await check(SONNET, { ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` });
    expect(unreachable).toMatchObject({ problem: { kind: "unreachable" }, requests: 1 });
    expect(unreachable.problem?.message).toContain("ANTHROPIC_BASE_URL");
  });

  it("a provider that cannot run on the configuration (Bedrock without a region) is reported without a request", async () => {
    const c = await check(BEDROCK, { AWS_REGION: "" });
    expect(c).toMatchObject({ problem: { kind: "failed" }, requests: 0 });
    expect(c.problem?.message).toContain("AWS_REGION");
    expect(servers.model.vendors.bedrock.calls()).toHaveLength(0);
  });
});
