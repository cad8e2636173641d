import type { CallbackHandlerMethods } from "@langchain/core/callbacks/base";
import type { Logger } from "pino";
import type { Config } from "../core/config.js";

/** Longest piece of a provider's error text that is logged. */
const MAX_PROVIDER_TEXT = 200;

/**
 * The provider's own words on a failed model call, shortened, with anything it quotes cut
 * out: a provider may echo part of the request ("… in 'The patient …'"), and the log
 * never holds case content.
 */
export function providerText(message: unknown): string {
  return String(message ?? "")
    .replace(/"[^"]*"|'[^']*'|`[^`]*`/g, "[quoted]")
    .replace(/\s+/g, " ")
    .slice(0, MAX_PROVIDER_TEXT);
}

/**
 * What a tenant is not told about a failed model call goes to the server log instead: the
 * endpoint, the HTTP status and the provider's message (results and events say only what
 * failed and what to do, docs/operations.md#threat-model). One line per failed attempt.
 */
export function providerFailureLog(config: Config, logger: Logger): CallbackHandlerMethods {
  const endpoint = config.llm.azure ? (config.llm.azure.endpoint ?? `https://${config.llm.azure.instanceName}.openai.azure.com`) : (config.llm.baseUrl ?? "https://api.openai.com/v1");
  return {
    handleLLMError(err: Error, _runId: string, _parentRunId?: string, tags?: string[]) {
      const e = err as Error & { status?: unknown; code?: unknown };
      logger.warn(
        {
          endpoint,
          agent: tags?.find((t) => t.startsWith("medmmv."))?.slice("medmmv.".length),
          status: typeof e.status === "number" ? e.status : undefined,
          code: typeof e.code === "string" ? e.code : undefined,
          type: e.name,
          provider: providerText(e.message),
        },
        "model call failed",
      );
    },
  };
}
