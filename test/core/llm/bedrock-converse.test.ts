import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { scriptedOrigin } from "../../../src/scripted/scripted-vendor-routes.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { catalogEntry } from "../../../src/core/llm/model-catalog.js";
import { callCostUsd } from "../../../src/core/llm/usage.js";
import { loadConfig } from "../../../src/core/config.js";
import { rawReply } from "../../../src/scripted/scripted-openai-server.js";

/**
 * Amazon Bedrock through LangChain's own integration (@langchain/aws ChatBedrockConverse and
 * the AWS SDK's BedrockRuntimeClient), against the scripted server's Converse endpoint: the
 * credentials come from the standard AWS chain (here its first link, the environment's keys;
 * in a hospital's account, the task's or instance's IAM role), and every request is SigV4-signed.
 */
const servers = useScriptedServers();
const SONNET = "bedrock:anthropic.claude-3-5-sonnet-20241022-v2:0";

beforeEach(() => {
  // The AWS SDK's default credential chain reads the process environment, as it would on a host.
  vi.stubEnv("AWS_ACCESS_KEY_ID", "AKIASCRIPTEDKEY0001");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "scripted-secret-access-key");
  vi.stubEnv("AWS_SESSION_TOKEN", "scripted-session-token");
  vi.stubEnv("AWS_PROFILE", "");
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe("Amazon Bedrock (bedrock:…) through ChatBedrockConverse", () => {
  it("a whole case runs on the Converse API, signed with the chain's credentials, priced from the catalog", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const cfg = servers.config({ MEDMMV_MODEL: SONNET, MEDMMV_JUDGE_MODEL: SONNET, AWS_REGION: "us-east-1", MEDMMV_BEDROCK_ENDPOINT: scriptedOrigin(servers.model.baseUrl) });
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-bedrock"), pipelineOptions(cfg, { k: 3 }));
    expect(() => DiagnosisResult.parse(result)).not.toThrow();
    expect(result.status).toBe("completed");
    expect(result.answer?.option).toBe("B");
    const calls = servers.model.vendors.bedrock.calls();
    expect(calls).toHaveLength(result.usage.llmCalls);
    for (const c of calls) {
      expect(c).toMatchObject({ model: "anthropic.claude-3-5-sonnet-20241022-v2:0", status: 200, accessKeyId: "AKIASCRIPTEDKEY0001", region: "us-east-1", sessionToken: "scripted-session-token", structured: "toolUse" });
    }
    // Prices from the catalog's Bedrock table, on the usage Converse states.
    const price = catalogEntry(SONNET)!.price!;
    expect(price.input).toBeGreaterThan(0);
    expect(result.usage.costUsd).toBeCloseTo(callCostUsd(price, result.usage.promptTokens, 0, result.usage.completionTokens), 6);
    expect(result.usage.unpricedCalls ?? 0).toBe(0);
  });

  /** A case whose every model call Bedrock refuses with `status` (the scripted server answers as Bedrock: x-amzn-errortype, { message }). */
  async function refusedCase(id: string, status: number, message: string) {
    servers.model.setScenario({ ...clinicalScenario({ rolloutAnswers: ["B"] }), agents: {}, fallback: rawReply(JSON.stringify({ error: { message } }), { status }) });
    const cfg = servers.config({ MEDMMV_MODEL: SONNET, MEDMMV_JUDGE_MODEL: SONNET, MEDMMV_VISION_MODEL: SONNET, AWS_REGION: "us-east-1", MEDMMV_BEDROCK_ENDPOINT: scriptedOrigin(servers.model.baseUrl), MEDMMV_LLM_MAX_ATTEMPTS: "3", MEDMMV_LLM_BACKOFF_BASE_MS: "1" });
    const before = servers.model.vendors.bedrock.calls().length;
    const { result } = await new Pipeline(cfg).run(chestPainCase(id), pipelineOptions(cfg, { k: 1 }));
    return { result, calls: servers.model.vendors.bedrock.calls().length - before, failures: result.provenance.failures ?? [] };
  }

  it("Bedrock's refusals are typed by the AWS SDK's exception, never \"connection error\": a long prompt is CONTEXT_TOO_LONG, sent once", async () => {
    const { result, calls, failures } = await refusedCase("case-bedrock-long", 400, "Input is too long for requested model.");
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("CONTEXT_TOO_LONG");
    // One request per branch: a ValidationException is not retried.
    expect(calls).toBe(failures.length);
    expect(JSON.stringify(failures)).not.toMatch(/connection error/);
  });

  it("…throttling is retried as a rate limit (HTTP 429), and a model the role may not invoke is a 403 naming the IAM permission", async () => {
    const throttled = await refusedCase("case-bedrock-throttled", 429, "Too many requests, please wait before trying again.");
    expect(throttled.result.status).toBe("failed");
    expect(throttled.failures.map((f) => f.message)).toContainEqual(expect.stringMatching(/failed after 3 attempt\(s\); last: HTTP 429/));
    expect(throttled.calls).toBe(3 * throttled.failures.length);
    const denied = await refusedCase("case-bedrock-denied", 403, "You don't have access to the model with the specified model ID.");
    expect(denied.result.status).toBe("failed");
    expect(denied.calls).toBe(denied.failures.length);
    expect(denied.failures[0]!.message).toMatch(/not permitted \(HTTP 403\).*bedrock:InvokeModel/);
  });

  it("a reply cut at its output budget (stopReason max_tokens) is re-asked once with a larger one, then OUTPUT_TRUNCATED", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    servers.model.addFault({ kind: "truncated-json", agent: "rollout" });
    const cfg = servers.config({ MEDMMV_MODEL: SONNET, MEDMMV_JUDGE_MODEL: SONNET, AWS_REGION: "us-east-1", MEDMMV_BEDROCK_ENDPOINT: scriptedOrigin(servers.model.baseUrl) });
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-bedrock-cut"), pipelineOptions(cfg, { k: 1 }));
    servers.model.clearFaults();
    expect((result.provenance.failures ?? []).find((f) => f.branch.startsWith("rollout"))?.code).toBe("OUTPUT_TRUNCATED");
    expect(result.usage.byAgent["rollout"]!.calls).toBe(2);
  });

  it("a bedrock:… model without a region is a configuration error naming AWS_REGION, never a call", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const cfg = loadConfig({ OPENAI_BASE_URL: servers.model.baseUrl, MEDMMV_MODEL: SONNET, MEDMMV_CACHE: "off", MEDMMV_LOG_LEVEL: "silent" });
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-bedrock-noregion"), pipelineOptions(cfg, { k: 1 }));
    expect(result.status).toBe("failed");
    expect(JSON.stringify(result.provenance.failures ?? result.error)).toMatch(/AWS_REGION/);
    expect(servers.model.vendors.bedrock.calls()).toHaveLength(0);
  });
});
