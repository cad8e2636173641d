import { describe, expect, it } from "vitest";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { explainProviderFailure, networkCode } from "../../../src/core/llm/provider-errors.js";

/** The rewording of first-run failures, on the error shapes fetch and the OpenAI SDK produce. */
const sdkConnectionError = (code: string) => {
  // APIConnectionError ← TypeError("fetch failed") ← the system error with the code.
  const sys = Object.assign(new Error(`getaddrinfo ${code} medmmv.invalid`), { code });
  return Object.assign(new Error("Connection error."), { name: "APIConnectionError", cause: new TypeError("fetch failed", { cause: sys }) });
};
const retryFailure = (cause: unknown, details: Record<string, unknown> = {}) => new MedmmvError("LLM_RETRYABLE", "executor (m): failed after 5 attempt(s)", { cause, details });

describe("networkCode", () => {
  it("finds the system code down the cause chain, and inside undici's AggregateError of addresses", () => {
    expect(networkCode(retryFailure(sdkConnectionError("ENOTFOUND")))).toBe("ENOTFOUND");
    const both = new AggregateError([Object.assign(new Error("v6"), { code: "ECONNREFUSED" }), Object.assign(new Error("v4"), { code: "ECONNREFUSED" })]);
    expect(networkCode(new TypeError("fetch failed", { cause: both }))).toBe("ECONNREFUSED");
    expect(networkCode(new Error("ECONNRESET mid-reply"))).toBeNull();
  });
});

describe("explainProviderFailure", () => {
  const facts = { role: "vision" as const, model: "llava", url: "http://gpu-box:8000/v1/chat/completions", azure: false };

  it("401 and 403 say what was refused: an API key, or a cloud's credentials (Bedrock's chain, Vertex AI's ADC); a 403 names the model and, on Bedrock, the IAM permission", () => {
    const refused = (status: number) => new MedmmvError("LLM_FATAL", "x: the provider refused the request", { details: { status } });
    expect(explainProviderFailure(refused(401), facts).message).toBe("the provider refused the API key (HTTP 401): check OPENAI_API_KEY (or AZURE_OPENAI_API_KEY)");
    const bedrock = { ...facts, model: "bedrock:anthropic.claude-3-5-sonnet-20241022-v2:0", variables: { url: "MEDMMV_BEDROCK_ENDPOINT / AWS_REGION (or MEDMMV_VISION_BASE_URL)", key: "the AWS credential chain (the IAM role, AWS_PROFILE, or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) (or MEDMMV_VISION_API_KEY)" } };
    expect(explainProviderFailure(refused(401), { ...bedrock, variables: { ...bedrock.variables, key: "Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS)" } }).message).toMatch(/^the provider refused the credentials \(HTTP 401\): check Application Default Credentials/);
    expect(explainProviderFailure(refused(403), bedrock).message).toMatch(/not permitted \(HTTP 403\): check that the AWS credential chain .* may use model "bedrock:anthropic.*bedrock:InvokeModel/);
  });

  it("DNS failure: names OPENAI_BASE_URL, keeps the code and retryability; the URL only in details, never in the message a tenant sees", () => {
    const err = explainProviderFailure(retryFailure(sdkConnectionError("ENOTFOUND")), facts);
    expect(err.code).toBe("LLM_RETRYABLE");
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("cannot reach the model endpoint (ENOTFOUND)");
    expect(err.message).not.toContain("gpu-box");
    expect(err.details?.endpoint).toBe("http://gpu-box:8000/v1/chat/completions");
    expect(err.message).toContain("check OPENAI_BASE_URL");
  });

  it("an untrusted TLS certificate (a hospital's inspecting proxy) names NODE_EXTRA_CA_CERTS", () => {
    const err = explainProviderFailure(retryFailure(sdkConnectionError("SELF_SIGNED_CERT_IN_CHAIN")), { ...facts, url: "https://llm.example.org/v1/chat/completions" });
    expect(err.message).toContain("TLS certificate is not trusted (SELF_SIGNED_CERT_IN_CHAIN)");
    expect(err.message).not.toContain("llm.example.org");
    expect(err.message).toContain("NODE_EXTRA_CA_CERTS");
  });

  it("on Azure, names Azure's endpoint variables and the deployment", () => {
    const az = { ...facts, azure: true, url: "https://res.openai.azure.com/openai/deployments/llava/chat/completions" };
    expect(explainProviderFailure(retryFailure(sdkConnectionError("ENOTFOUND")), az).message).toContain("AZURE_OPENAI_ENDPOINT / AZURE_OPENAI_API_INSTANCE_NAME");
    const notFound = new MedmmvError("LLM_FATAL", "refused", { cause: Object.assign(new Error("404"), { status: 404 }), details: { status: 404 } });
    expect(explainProviderFailure(notFound, az).message).toContain('deployment "llava" unknown to the server');
  });

  it("404 names the role's own variable; other failures pass through unchanged", () => {
    const notFound = new MedmmvError("LLM_FATAL", "refused", { details: { status: 404 } });
    expect(explainProviderFailure(notFound, facts).message).toContain("the vision role reads MEDMMV_VISION_MODEL, else MEDMMV_MODEL");
    const timeout = new MedmmvError("LLM_TIMEOUT", "timed out");
    expect(explainProviderFailure(timeout, facts)).toBe(timeout);
    const server = new MedmmvError("LLM_RETRYABLE", "HTTP 503", { details: { status: 503 } });
    expect(explainProviderFailure(server, facts)).toBe(server);
  });
});
