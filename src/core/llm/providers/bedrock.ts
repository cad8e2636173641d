import { MedmmvError } from "../../contracts/errors.js";
import { lazyIntegration, sdkTimeoutMs, unitTemperature, type ProviderModule } from "./provider-module.js";

const integration = lazyIntegration("bedrock", () => import("../bedrock-chat-model.js"));

/**
 * Amazon Bedrock's Converse API through LangChain's own integration (@langchain/aws
 * ChatBedrockConverse: bedrock-chat-model.ts), signed with the standard AWS credential chain;
 * medmmv holds no AWS key. JSON by a forced tool (toolChoice), which ChatBedrockConverse renders.
 */
export const bedrock: ProviderModule = {
  id: "bedrock",
  defaults: (cfg) => ({ baseUrl: cfg.bedrock?.endpoint ?? null, apiKey: null }),
  endpointUrl: (t, cfg) => `${t.baseUrl ?? `https://bedrock-runtime.${cfg.bedrock?.region ?? "<AWS_REGION>"}.amazonaws.com`}/model/${encodeURIComponent(t.model)}/converse`,
  structuredMethod: () => "functionCalling",
  structuredMethods: () => ["functionCalling"],
  variables: { url: "MEDMMV_BEDROCK_ENDPOINT / AWS_REGION", key: "the AWS credential chain (the IAM role, AWS_PROFILE, or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)" },
  load: integration.load,
  build(t, { temperature, maxTokens }, cfg) {
    const region = cfg.bedrock?.region;
    if (!region) throw new MedmmvError("CONFIG_MISSING", `${t.spec} is an Amazon Bedrock model: set AWS_REGION (credentials come from the AWS chain: an IAM role, AWS_PROFILE or AWS_ACCESS_KEY_ID)`);
    return integration.get().bedrockChatModel({ model: t.model, region, endpoint: t.baseUrl, ...unitTemperature(temperature), ...(maxTokens !== undefined ? { maxTokens } : {}), timeoutMs: sdkTimeoutMs(cfg) });
  },
};
