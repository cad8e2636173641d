import type { Config } from "../../config.js";
import { MedmmvError } from "../../contracts/errors.js";
import { lazyIntegration, type ProviderModule } from "./provider-module.js";

const integration = lazyIntegration("google-vertexai", () => import("../vertex-chat-model.js"));

/** Vertex AI's generateContent URL for a google-vertexai:… model, as @langchain/google-vertexai builds it (for messages and first-contact keys). */
function vertexEndpoint(v: Config["llm"]["vertex"], t: { model: string; baseUrl: string | null }): string {
  const location = v?.location ?? "us-central1";
  // A multi-region (`us`, `eu`) is served by its regional endpoint (…rep.googleapis.com), a region by <region>-aiplatform.
  const host = t.baseUrl?.replace(/^https:\/\//i, "").replace(/\/+$/, "") ?? (location === "global" ? "aiplatform.googleapis.com" : location.includes("-") ? `${location}-aiplatform.googleapis.com` : `aiplatform.${location}.rep.googleapis.com`);
  return `https://${host}/v1/projects/${v?.project ?? "<GOOGLE_CLOUD_PROJECT>"}/locations/${location}/publishers/google/models/${t.model}:generateContent`;
}

/**
 * Gemini on Google Cloud's Vertex AI through LangChain's own integration
 * (@langchain/google-vertexai ChatVertexAI: vertex-chat-model.ts), on Application Default
 * Credentials only — never an API key — with tokens exchanged again as they expire. JSON as on
 * the Gemini API: its responseSchema, or a forced function call when configured.
 */
export const googleVertexai: ProviderModule = {
  id: "google-vertexai",
  defaults: (cfg) => ({ baseUrl: cfg.vertex?.endpoint ?? null, apiKey: null }),
  endpointUrl: (t, cfg) => vertexEndpoint(cfg.vertex, t),
  structuredMethod: (cfg) => (cfg.structuredOutput === "functionCalling" ? "functionCalling" : "jsonSchema"),
  structuredMethods: ["jsonSchema", "functionCalling"],
  variables: { url: "MEDMMV_VERTEX_ENDPOINT / GOOGLE_CLOUD_LOCATION / GOOGLE_CLOUD_PROJECT", key: "Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, or the attached service account) and its roles/aiplatform.user" },
  load: integration.load,
  build(t, { temperature, maxTokens }, cfg) {
    const v = cfg.vertex;
    if (!v?.project) throw new MedmmvError("CONFIG_MISSING", `${t.spec} is a Vertex AI model: set GOOGLE_CLOUD_PROJECT (and GOOGLE_CLOUD_LOCATION; credentials come from Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS or the attached service account)`);
    return integration.get().vertexChatModel({ model: t.model, project: v.project, location: v.location, endpoint: t.baseUrl, ...(temperature !== undefined ? { temperature } : {}), ...(maxTokens !== undefined ? { maxTokens } : {}) });
  },
};
