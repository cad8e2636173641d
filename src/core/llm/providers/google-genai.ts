import { MedmmvError } from "../../contracts/errors.js";
import { commonOptions, lazyIntegration, trimmed, type ProviderModule } from "./provider-module.js";

export const GOOGLE_GENAI_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com";

const integration = lazyIntegration("google-genai", () => import("../gemini-chat-model.js"));

/**
 * The Gemini Developer API through LangChain's own integration (@langchain/google-genai,
 * abortable: gemini-chat-model.ts). JSON by its responseSchema unless function calling was
 * configured (the integration has no JSON mode).
 */
export const googleGenai: ProviderModule = {
  id: "google-genai",
  defaults: (cfg) => cfg.google,
  endpointUrl: (t) => `${trimmed(t.baseUrl ?? GOOGLE_GENAI_DEFAULT_BASE_URL)}/v1beta/models/${t.model}:generateContent`,
  structuredMethod: (_model, cfg) => (cfg.structuredOutput === "functionCalling" ? "functionCalling" : "jsonSchema"),
  structuredMethods: () => ["jsonSchema", "functionCalling"],
  variables: { url: "GOOGLE_GENAI_BASE_URL", key: "GOOGLE_API_KEY" },
  load: integration.load,
  build(t, { temperature, maxTokens }) {
    // Config refuses a missing key at load (config.ts); a program that builds its own Config gets a typed error too.
    if (!t.apiKey) throw new MedmmvError("CONFIG_MISSING", `${t.spec} needs an API key: set GOOGLE_API_KEY (or the role's own MEDMMV_<ROLE>_API_KEY)`);
    // Gemini's SDK takes no fetch of ours: its replies have no size cap or reply tap (usage comes from
    // LangChain's usage metadata), and its timeout is our per-attempt abort alone (gemini-chat-model.ts).
    return new (integration.get().AbortableChatGoogleGenerativeAI)({
      ...commonOptions(t, temperature),
      ...(maxTokens !== undefined ? { maxOutputTokens: maxTokens } : {}),
      apiKey: t.apiKey,
      baseUrl: t.baseUrl ?? GOOGLE_GENAI_DEFAULT_BASE_URL,
    });
  },
};
