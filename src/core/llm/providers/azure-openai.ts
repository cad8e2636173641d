import { AzureChatOpenAI } from "@langchain/openai";
import { MedmmvError } from "../../contracts/errors.js";
import { guardedFetch } from "../model-fetch.js";
import { commonOptions, keyHeader, sdkTimeoutMs, type ProviderModule } from "./provider-module.js";

/** AZURE_OPENAI_API_VERSION's default (config.ts), for an azure_openai: model named without the Azure settings' version. */
const AZURE_DEFAULT_API_VERSION = "2024-10-21";

/**
 * Azure OpenAI: a deployment on a resource (AZURE_OPENAI_ENDPOINT or
 * AZURE_OPENAI_API_INSTANCE_NAME, AZURE_OPENAI_API_KEY). The chat-completions wire under a
 * deployment's URL, so built to the model's profile like any OpenAI-compatible model.
 */
export const azureOpenai: ProviderModule = {
  id: "azure_openai",
  defaults: (cfg) => ({ baseUrl: cfg.azure?.endpoint ?? (cfg.azure?.instanceName ? `https://${cfg.azure.instanceName}.openai.azure.com` : null), apiKey: cfg.azure?.apiKey ?? null }),
  endpointUrl: (t) => `${t.baseUrl ?? "https://<AZURE_OPENAI_API_INSTANCE_NAME>.openai.azure.com"}/openai/deployments/${t.model}/chat/completions`,
  structuredMethod: () => null,
  structuredMethods: () => [],
  // The deployment's route with the configured API version, and Azure's api-key header.
  chatCompletionsRequest: (t, cfg) => ({ url: `${azureOpenai.endpointUrl(t, cfg)}?api-version=${cfg.azure?.apiVersion ?? AZURE_DEFAULT_API_VERSION}`, headers: keyHeader("api-key", t.apiKey) }),
  azure: true,
  build(t, { temperature, maxTokens, modelKwargs }, cfg) {
    if (!t.apiKey || !t.baseUrl) throw new MedmmvError("CONFIG_MISSING", `${t.spec} is an Azure OpenAI deployment: set AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT (or AZURE_OPENAI_API_INSTANCE_NAME)`);
    return new AzureChatOpenAI({
      ...commonOptions(t, temperature),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(modelKwargs ? { modelKwargs } : {}),
      timeout: sdkTimeoutMs(cfg),
      azureOpenAIApiKey: t.apiKey,
      azureOpenAIApiDeploymentName: t.model,
      azureOpenAIApiVersion: cfg.azure?.apiVersion ?? AZURE_DEFAULT_API_VERSION,
      azureOpenAIEndpoint: t.baseUrl,
      configuration: { fetch: guardedFetch() },
    });
  },
};
