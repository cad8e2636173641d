import type { Config } from "../../config.js";
import { MedmmvError } from "../../contracts/errors.js";
import { lazyIntegration, unitTemperature, type ProviderModule, type StructuredMethodOf } from "./provider-module.js";

const integration = lazyIntegration("google-vertexai", () => import("../vertex-chat-model.js"));

/**
 * A Claude model on Vertex AI (claude-sonnet-4-5@20250929): ChatVertexAI sends it to the Anthropic
 * publisher's rawPredict with Anthropic's Messages body, by the same test of the name
 * (@langchain/google-common's isModelClaude: the name starts with "claude").
 */
export function isVertexClaude(model: string): boolean {
  return model.toLowerCase().startsWith("claude");
}

/**
 * Vertex AI's URL for a google-vertexai:… model, as @langchain/google-vertexai builds it (for messages and
 * first-contact keys): Gemini's generateContent, or Claude's rawPredict. Without GOOGLE_CLOUD_LOCATION the
 * integration's own default: us-central1 for Gemini, us-east5 for Claude (google-common's computedLocation).
 */
function vertexEndpoint(v: Config["llm"]["vertex"], t: { model: string; baseUrl: string | null }): string {
  const claude = isVertexClaude(t.model);
  const location = v?.location ?? (claude ? "us-east5" : "us-central1");
  // A multi-region (`us`, `eu`) is served by its regional endpoint (…rep.googleapis.com), a region by <region>-aiplatform.
  const host = t.baseUrl?.replace(/^https:\/\//i, "").replace(/\/+$/, "") ?? (location === "global" ? "aiplatform.googleapis.com" : location.includes("-") ? `${location}-aiplatform.googleapis.com` : `aiplatform.${location}.rep.googleapis.com`);
  const path = claude ? `publishers/anthropic/models/${t.model}:rawPredict` : `publishers/google/models/${t.model}:generateContent`;
  return `https://${host}/v1/projects/${v?.project ?? "<GOOGLE_CLOUD_PROJECT>"}/locations/${location}/${path}`;
}

/**
 * How a model on Vertex AI is asked for JSON. Claude: a forced tool call, the one way its Messages
 * wire takes there — the integration's jsonSchema method sets Gemini's responseSchema, which the
 * Anthropic body does not carry (google-common's anthropic formatData drops it), and Vertex AI's
 * Claude refuses Anthropic's `output_config` ("output_config: Extra inputs are not permitted",
 * anthropics/anthropic-sdk-python#1199, OpenHands/software-agent-sdk#1630). Gemini: its responseSchema,
 * unless function calling was configured.
 */
function methodsOf(model: string): readonly StructuredMethodOf[] {
  return isVertexClaude(model) ? ["functionCalling"] : ["jsonSchema", "functionCalling"];
}

/**
 * Gemini and Claude on Google Cloud's Vertex AI through LangChain's own integration
 * (@langchain/google-vertexai ChatVertexAI: vertex-chat-model.ts), on Application Default
 * Credentials only — never an API key — with tokens exchanged again as they expire. JSON per
 * model (methodsOf); Claude's temperature runs 0–1, as on Anthropic's API.
 */
export const googleVertexai: ProviderModule = {
  id: "google-vertexai",
  defaults: (cfg) => ({ baseUrl: cfg.vertex?.endpoint ?? null, apiKey: null }),
  endpointUrl: (t, cfg) => vertexEndpoint(cfg.vertex, t),
  structuredMethod: (model, cfg) => (isVertexClaude(model) || cfg.structuredOutput === "functionCalling" ? "functionCalling" : "jsonSchema"),
  structuredMethods: methodsOf,
  variables: { url: "MEDMMV_VERTEX_ENDPOINT / GOOGLE_CLOUD_LOCATION / GOOGLE_CLOUD_PROJECT", key: "Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, or the attached service account) and its roles/aiplatform.user" },
  load: integration.load,
  build(t, { temperature, maxTokens }, cfg) {
    const v = cfg.vertex;
    if (!v?.project) throw new MedmmvError("CONFIG_MISSING", `${t.spec} is a Vertex AI model: set GOOGLE_CLOUD_PROJECT (and GOOGLE_CLOUD_LOCATION; credentials come from Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS or the attached service account)`);
    const temperatureOf = isVertexClaude(t.model) ? unitTemperature(temperature) : temperature !== undefined ? { temperature } : {};
    return integration.get().vertexChatModel({ model: t.model, project: v.project, location: v.location, endpoint: t.baseUrl, ...temperatureOf, ...(maxTokens !== undefined ? { maxTokens } : {}) });
  },
};
