import { causes, MedmmvError } from "../contracts/errors.js";
import { MODEL_VARIABLE, type Role } from "./chat-models.js";
import { filteredCategories, type FilterCategory, type Rejection } from "./provider-rejection.js";

/**
 * First-run failures of the model endpoint, reworded to name the fix (issue 16): an
 * operator who mistyped a URL, a key or a model name must read which variable to change,
 * never "try again later". The code and retryability of the failure are kept.
 */
export interface EndpointFacts {
  role: Role;
  model: string;
  /** The URL requests went to; null for a chat model the embedding program handed in. */
  url: string | null;
  azure: boolean;
  /** The variables naming the endpoint and key, where they are not the OpenAI-compatible endpoint's (Anthropic, Gemini). */
  variables?: { url: string; key: string };
}

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

/** Certificate failures: typically a TLS-inspecting proxy or a private CA in a hospital network. */
const UNTRUSTED_TLS = new Set(["UNABLE_TO_VERIFY_LEAF_SIGNATURE", "DEPTH_ZERO_SELF_SIGNED_CERT", "SELF_SIGNED_CERT_IN_CHAIN", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "CERT_HAS_EXPIRED", "ERR_TLS_CERT_ALTNAME_INVALID"]);

/** The first system error code of `kinds` down an error's cause chain. */
function codeIn(err: unknown, kinds: Set<string>): string | null {
  for (const e of causes(err)) {
    const rec = e as { code?: unknown; errors?: unknown };
    if (typeof rec.code === "string" && kinds.has(rec.code)) return rec.code;
    // undici tries every address of a host name (IPv6 and IPv4): an AggregateError of them.
    if (Array.isArray(rec.errors)) {
      const inner = rec.errors.map((x) => codeIn(x, kinds)).find((c) => c !== null);
      if (inner) return inner;
    }
  }
  return null;
}

/** The system error code (ECONNREFUSED, ENOTFOUND…) of an endpoint that could not be reached. */
export function networkCode(err: unknown): string | null {
  return codeIn(err, UNREACHABLE);
}

/** Whether fetch refused the URL's port outright (its blocked-ports list: 9, 6000, 10080…). */
function blockedPort(err: unknown): boolean {
  return [...causes(err)].some((e) => (e as { message?: unknown }).message === "bad port");
}

/** The HTTP status down an error's cause chain (our MedmmvError wraps the SDK's). */
function statusOf(err: unknown): number | null {
  for (const e of causes(err)) {
    const rec = e as { status?: unknown; details?: { status?: unknown } };
    if (typeof rec.status === "number") return rec.status;
    if (typeof rec.details?.status === "number") return rec.details.status;
  }
  return null;
}

/**
 * The messages name the variable to fix but never the endpoint's URL: they reach the owner
 * of the case (its result, its events), who must not learn the service's internal addresses.
 * The URL is kept in `details.endpoint`, for the operator's own tools and logs.
 */
export function explainProviderFailure(err: MedmmvError, facts: EndpointFacts): MedmmvError {
  if (err.code === "ABORTED" || err.code === "LLM_BAD_OUTPUT" || err.code === "LLM_TIMEOUT") return err;
  const endpointVars = facts.variables?.url ?? (facts.azure ? "AZURE_OPENAI_ENDPOINT / AZURE_OPENAI_API_INSTANCE_NAME" : "OPENAI_BASE_URL");
  const native = facts.variables !== undefined;
  const rewrite = (message: string, fix: string) =>
    new MedmmvError(err.code, `${message}: ${fix}`, { cause: err, retryable: err.retryable, details: { ...err.details, fix, ...(facts.url ? { endpoint: facts.url } : {}) } });
  const net = networkCode(err);
  if (net) return rewrite(`cannot reach the model endpoint (${net})`, `check ${endpointVars}: is the server running there, and is the URL right${facts.azure || native ? "" : " (it ends in /v1)"}?`);
  const tls = codeIn(err, UNTRUSTED_TLS);
  if (tls)
    return rewrite(
      `the model endpoint's TLS certificate is not trusted (${tls})`,
      `check ${endpointVars}; if a proxy or a private CA signs the certificate, point NODE_EXTRA_CA_CERTS at the CA's certificate file`,
    );
  if (blockedPort(err))
    return rewrite(`the model endpoint's port is one that fetch refuses to connect to (a blocked port)`, `serve the model on another port and change ${endpointVars}`);
  const status = statusOf(err);
  // Bedrock and Vertex AI sign with credentials from their cloud's chain, not an API key: the message says which.
  const credential = facts.variables?.key && !/API_KEY/.test(facts.variables.key) ? "credentials" : "API key";
  if (status === 401) return rewrite(`the provider refused the ${credential} (HTTP 401)`, `check ${facts.variables?.key ?? "OPENAI_API_KEY (or AZURE_OPENAI_API_KEY)"}`);
  // Credentials that are valid but not allowed this model or action (Bedrock's AccessDeniedException: the role lacks
  // bedrock:InvokeModel, or the model's access was never granted in the account; OpenAI's project or region restrictions).
  if (status === 403)
    return rewrite(`the provider refused the request as not permitted (HTTP 403)`, `check that ${facts.variables?.key ?? "OPENAI_API_KEY (or AZURE_OPENAI_API_KEY)"} may use model "${facts.model}"${facts.variables?.key?.includes("AWS") ? " (the IAM policy allows bedrock:InvokeModel on it, and the model's access is granted in the Bedrock console for this region)" : ""}`);
  if (status === 404) {
    const what = facts.azure ? `deployment "${facts.model}"` : `model "${facts.model}"`;
    return rewrite(
      `${what} unknown to the server (HTTP 404)`,
      `check MEDMMV_MODEL / MEDMMV_*_MODEL (the ${facts.role} role reads ${MODEL_VARIABLE[facts.role]}${facts.role === "executor" ? "" : ", else MEDMMV_MODEL"})${facts.azure ? "" : native ? `, and ${endpointVars}` : ", and that OPENAI_BASE_URL ends in /v1"}`,
    );
  }
  return err;
}

/** A failure the model or its server explained, beside the refusals of provider-rejection.ts. */
export type ModelFailure =
  | Rejection
  | { kind: "refused"; message: string }
  | { kind: "truncated"; message: string }
  /** The server answered, but its usage shows it read far fewer tokens than the prompt holds (context-truncation.ts). */
  | { kind: "contextTruncated"; promptTokens: number; expectedTokens: number; promptChars: number; notSent?: boolean };

export interface FailureFacts extends EndpointFacts {
  agent: string;
}

function categoriesText(categories: FilterCategory[]): string {
  return categories.length ? categories.map((c) => `${c.category}${c.severity ? `: ${c.severity}` : ""}`).join(", ") : "no category stated";
}

/**
 * The typed error of a failure the provider explained. Its message is safe for the case's
 * owner (it names the agent, the parameter, the filter's categories, the sizes), never the
 * provider's own words, which can quote the case: those stay on the cause, for the server
 * log and the CLI (whose user is the operator). None of these is retried: the same request
 * would meet the same answer.
 */
export function modelFailure(
  f: ModelFailure,
  cause: unknown,
  facts: FailureFacts,
  extra: { promptChars?: number; contextWindow?: number | null; contentFilterResults?: unknown; maxOutputTokens?: number; outputLimit?: number | null } = {},
): MedmmvError {
  const who = `${facts.agent} (${facts.model})`;
  const opts = (details: Record<string, unknown>) => ({ cause, retryable: false, details: { agent: facts.agent, model: facts.model, ...details } });
  switch (f.kind) {
    case "contentFilter": {
      const categories = f.categories.length ? f.categories : filteredCategories(extra.contentFilterResults);
      const provider = f.provider ?? (facts.azure ? "Azure OpenAI" : "the provider");
      const where = cause === undefined ? "reply" : "prompt";
      return new MedmmvError(
        "CONTENT_FILTERED",
        `${who}: ${f.provider ?? `${provider}'s content filter`} refused the ${where} (${categoriesText(categories)}); not retried. Clinical notes often trip these filters: ask the provider for a filter configuration for clinical use, or run this case on another deployment`,
        opts({ provider, filteredAt: where, categories }),
      );
    }
    case "refused":
      return new MedmmvError("MODEL_REFUSED", `${who}: the model declined to answer (its reply is a refusal); not retried`, opts({}));
    case "truncated":
      return new MedmmvError(
        "OUTPUT_TRUNCATED",
        `${who}: the reply was cut at its output limit (${extra.maxOutputTokens ?? "?"} tokens) also after a re-ask with a larger budget${extra.outputLimit ? ` (the model's limit is ${extra.outputLimit})` : ""}; set a larger outputLimit for the model in MEDMMV_MODEL_PROFILES, or use a model with a larger output limit`,
        opts({ maxOutputTokens: extra.maxOutputTokens ?? null, outputLimit: extra.outputLimit ?? null }),
      );
    case "contextLength": {
      const window = f.window ?? extra.contextWindow ?? null;
      return new MedmmvError(
        "CONTEXT_TOO_LONG",
        `${who}: the prompt (${f.requested !== null ? `${f.requested} tokens` : `${extra.promptChars ?? "?"} characters`}) does not fit the model's context window${window !== null ? ` of ${window} tokens` : ""}; lower MEDMMV_FHIR_NOTES_BUDGET (the notes every call carries) or MEDMMV_IMAGE_MODEL_LONG_SIDE, send fewer images, or use a model with a larger window`,
        opts({ window, requested: f.requested }),
      );
    }
    case "parameter":
      return new MedmmvError(
        "MODEL_PARAMETER_UNSUPPORTED",
        `${who}: the model does not take the parameter "${f.parameter}", and it cannot be left out; describe the model in MEDMMV_MODEL_PROFILES (docs/models.md), or check \`medmmv models check\``,
        opts({ parameter: f.parameter }),
      );
    case "structuredOutput":
      return new MedmmvError(
        "MODEL_PARAMETER_UNSUPPORTED",
        `${who}: the server refuses "${f.parameter}" and no other structured-output mode is left to try; set the modes that work in MEDMMV_STRUCTURED_OUTPUT or the model's profile (\`medmmv models check\` probes them)`,
        opts({ parameter: f.parameter }),
      );
    case "noImages":
      return new MedmmvError(
        "MODEL_NO_IMAGES",
        `${who}: the model takes no images (its server refused the image parts); not retried. Set "imagesPerRequest": 0 for the model in MEDMMV_MODEL_PROFILES (its calls then go without images, said in provenance), give the ${facts.role} role a vision model, or (llama.cpp) start llama-server with the model's --mmproj`,
        opts({ parameter: "images" }),
      );
    case "quota":
      if (f.period === "day")
        return new MedmmvError(
          "QUOTA_EXCEEDED",
          `${who}: the provider's daily quota is used up (${f.code}): not a rate limit that clears in seconds, so not retried within this call. It resets once a day (Google: requests-per-day quotas reset at midnight Pacific time); until then raise the quota or move to a paid tier with the provider, or use another project's key`,
          opts({ quota: f.code, period: "day" }),
        );
      return new MedmmvError(
        "QUOTA_EXCEEDED",
        `${who}: the provider refused the call for the account's quota or credit (${f.code}): a billing stop, not a rate limit; not retried. Add credit or raise the spending limit with the provider, or use another key`,
        opts({ quota: f.code }),
      );
    case "contextTruncated":
      return new MedmmvError(
        "CONTEXT_TRUNCATED",
        `${who}: ${f.notSent ? `not sent: the server cut an earlier prompt to ${f.promptTokens} tokens, and this one needs about ${f.expectedTokens} (${f.promptChars} characters)` : `the server read only ${f.promptTokens} prompt tokens of a prompt that needs about ${f.expectedTokens} (${f.promptChars} characters): it cut the prompt to its context window and answered without the whole case, so the reply is not used`}; its window appears to be about ${f.promptTokens} tokens. Raise the server's window: Ollama: OLLAMA_CONTEXT_LENGTH on the server, or options.num_ctx / PARAMETER num_ctx in a Modelfile (its OpenAI-compatible API cannot set it); llama.cpp: llama-server -c <tokens>; then set contextWindow for the model in MEDMMV_MODEL_PROFILES`,
        opts({ apparentWindow: f.promptTokens, expectedTokens: f.expectedTokens, promptChars: f.promptChars }),
      );
    case "imageLimit":
      return new MedmmvError(
        "MODEL_PARAMETER_UNSUPPORTED",
        `${who}: the server takes at most ${f.limit} image(s) per request even after the images were composed to fit; raise its limit (vLLM: --limit-mm-per-prompt)`,
        opts({ parameter: "images", imagesPerRequest: f.limit }),
      );
  }
}
