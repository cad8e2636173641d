import { readFileSync } from "node:fs";
import { z } from "zod";
import { MedmmvError } from "./contracts/errors.js";
import { describeZodIssues } from "./contracts/zod-issues.js";
import { FHIR_DEFAULTS } from "./intake/fhir/bundle-to-case.js";
import { defaultRedisPrefix, deploymentId } from "./deployment-identity.js";
import { catalogPrices, ModelProfileOverrides, REASONING_EFFORTS, type ReasoningEffort } from "./llm/model-profile.js";
import { parseModelSpec, priceOf, type ModelProvider } from "./llm/model-spec.js";
import { readApiKeysFile, readIssuersFile, type ApiKeyEntry } from "./access-files.js";

/**
 * The one place that reads the environment (docs/architecture.md#house-style). Everything else receives a
 * typed Config. CLI flags override env through `overrides`.
 */
const csvNumbers = (n: number) =>
  z
    .string()
    .transform((s) => s.split(",").map((x) => Number(x.trim())))
    .refine((a) => a.length === n && a.every((x) => Number.isFinite(x) && x >= 0), {
      message: `expected ${n} comma-separated non-negative numbers`,
    });

/** Shortest API key or view-link secret accepted: 32 characters leave no room for guessing within any rate limit. */
export const MIN_SECRET_CHARS = 32;

export const EnvSchema = z.object({
  OPENAI_API_KEY: z.string().optional().describe("API key of the OpenAI-compatible endpoint. Without it (a local server) no Authorization header is sent."),
  OPENAI_BASE_URL: z.string().url().optional().describe("Base URL of the OpenAI-compatible endpoint, ending in /v1 (vLLM, Ollama, LM Studio, …). Unset: https://api.openai.com/v1."),
  MEDMMV_MODEL: z.string().optional().describe("Executor model (rollouts, repair). Vision and judge default to it. With Azure: a deployment name. A provider prefix, as LangChain's initChatModel names models, picks LangChain's own integration: anthropic:claude-…, google-genai:gemini-…; openai:… and azure_openai:… name the OpenAI-compatible endpoint and Azure. No prefix: the OpenAI-compatible endpoint (Azure when AZURE_OPENAI_API_KEY is set)."),
  MEDMMV_VISION_MODEL: z.string().optional().describe("Vision model (ImageDoctor); default MEDMMV_MODEL. May name another provider (prefix as in MEDMMV_MODEL)."),
  MEDMMV_JUDGE_MODEL: z.string().optional().describe("Judge model (hallucination detector, coherence judge, raters); default MEDMMV_MODEL. May name another provider (prefix as in MEDMMV_MODEL)."),
  MEDMMV_ROLLOUT_MODELS: z.string().optional().describe("Comma-separated models (each may carry a provider prefix) the k rollouts are spread over, round-robin: rollout i runs on model i mod n. Unset: every rollout runs on MEDMMV_MODEL. Each runs on its provider's endpoint and key (the executor's own MEDMMV_EXECUTOR_* settings where it is the executor's model)."),
  ANTHROPIC_API_KEY: z.string().optional().describe("API key for anthropic:… models (Anthropic's Messages API through @langchain/anthropic)."),
  ANTHROPIC_BASE_URL: z.string().url().optional().describe("Base URL of the Anthropic Messages API for anthropic:… models (a proxy or a test server), without /v1. Unset: https://api.anthropic.com."),
  GOOGLE_API_KEY: z.string().optional().describe("API key for google-genai:… models (the Gemini API through @langchain/google-genai)."),
  GOOGLE_GENAI_BASE_URL: z.string().url().optional().describe("Base URL of the Gemini API for google-genai:… models (a proxy or a test server), without /v1beta. Unset: https://generativelanguage.googleapis.com."),
  AWS_REGION: z.string().optional().describe("AWS region of bedrock:… models (Amazon Bedrock's Converse API through @langchain/aws), e.g. us-east-1; AWS_DEFAULT_REGION is read when it is unset. Credentials come from the standard AWS chain (an IAM role, AWS_PROFILE, AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN), never from medmmv's own variables."),
  AWS_DEFAULT_REGION: z.string().optional().describe("AWS region for bedrock:… models when AWS_REGION is unset (the AWS CLI's older name)."),
  MEDMMV_BEDROCK_ENDPOINT: z.string().url().optional().describe("Endpoint of Bedrock's runtime API for bedrock:… models: a VPC interface endpoint (PrivateLink), a FIPS endpoint, or a test server. Unset: https://bedrock-runtime.<region>.amazonaws.com."),
  GOOGLE_CLOUD_PROJECT: z.string().optional().describe("Google Cloud project of google-vertexai:… models (Gemini and Claude on Vertex AI through @langchain/google-vertexai); required for them. Credentials come from Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS naming a service-account or workload-identity-federation file, or the attached service account of GKE / Cloud Run / Compute Engine), never from medmmv's own variables; access tokens are refreshed as they expire."),
  GOOGLE_CLOUD_LOCATION: z.string().optional().describe("Vertex AI location of google-vertexai:… models (a region such as europe-west4 keeps the data in it, or global). Unset: the integration's default, us-central1 for Gemini and us-east5 for Claude (google-vertexai:claude-…@…)."),
  MEDMMV_VERTEX_ENDPOINT: z
    .string()
    .regex(/^(https:\/\/)?[A-Za-z0-9.-]+(:\d+)?\/?$/, "must be a host name with an optional port (e.g. europe-west4-aiplatform.googleapis.com or a Private Service Connect endpoint's name); Vertex AI is reached over https only")
    .optional()
    .describe("Host of the Vertex AI API for google-vertexai:… models: a Private Service Connect endpoint (e.g. europe-west4-aiplatform-myendpoint.p.googleapis.com) (inside a VPC Service Controls perimeter), a regional endpoint of its own, or a test server. Always https: a private CA's certificate goes in NODE_EXTRA_CA_CERTS. Unset: <location>-aiplatform.googleapis.com."),
  MEDMMV_EXECUTOR_BASE_URL: z.string().url().optional().describe("The executor's own endpoint, overriding its provider's (OPENAI_BASE_URL, ANTHROPIC_BASE_URL or GOOGLE_GENAI_BASE_URL) for this role only."),
  MEDMMV_EXECUTOR_API_KEY: z.string().optional().describe("The executor's own API key, overriding its provider's key for this role only."),
  MEDMMV_VISION_BASE_URL: z.string().url().optional().describe("The vision role's own endpoint, overriding its provider's for this role only (a mixed-vendor panel: e.g. MEDMMV_VISION_MODEL=google-genai:gemini-2.5-flash with its own URL)."),
  MEDMMV_VISION_API_KEY: z.string().optional().describe("The vision role's own API key, overriding its provider's key for this role only."),
  MEDMMV_JUDGE_BASE_URL: z.string().url().optional().describe("The judge role's own endpoint, overriding its provider's for this role only."),
  MEDMMV_JUDGE_API_KEY: z.string().optional().describe("The judge role's own API key, overriding its provider's key for this role only."),
  MEDMMV_STRUCTURED_OUTPUT: z.enum(["jsonSchema", "functionCalling", "jsonMode"]).default("jsonSchema").describe("How structured output is requested: response_format json_schema, a forced tool call, or json_object with the schema in the prompt. Pick what your server supports."),
  MEDMMV_MODEL_PROFILES: z.string().optional().describe("JSON object of model profiles, by model name, overriding what models.dev's catalog says (or filling in for a self-hosted model it does not know): { \"name\": { \"temperature\": false, \"tokenParameter\": \"max_completion_tokens\", \"reasoning\": true, \"structuredOutput\": [\"functionCalling\", \"jsonMode\"], \"imagesPerRequest\": 1, \"contextWindow\": 32768, \"outputLimit\": 8192 } } (every field optional; docs/models.md)."),
  MEDMMV_MODEL_PROFILES_FILE: z.string().optional().describe("A JSON file of model profiles in the MEDMMV_MODEL_PROFILES format; MEDMMV_MODEL_PROFILES entries override its models."),
  MEDMMV_REASONING_EFFORT: z
    .string()
    .regex(/^(minimal|low|medium|high)$|^((executor|vision|judge)=(minimal|low|medium|high))(,(executor|vision|judge)=(minimal|low|medium|high))*$/, "minimal, low, medium or high, or per role: executor=high,judge=low")
    .optional()
    .describe("reasoning_effort sent to reasoning models (GPT-5, o3, o4-mini…): one value for all roles, or per role (executor=high,judge=low; unnamed roles send none, the model's default). Never sent to other models."),
  AZURE_OPENAI_API_KEY: z.string().optional().describe("Azure OpenAI (the names LangChain's AzureChatOpenAI reads): used instead of OPENAI_* when the key is set."),
  AZURE_OPENAI_API_INSTANCE_NAME: z.string().optional().describe("Azure OpenAI resource name (https://NAME.openai.azure.com); this or AZURE_OPENAI_ENDPOINT is required with the key."),
  AZURE_OPENAI_ENDPOINT: z.string().url().optional().describe("Azure OpenAI endpoint URL, instead of the instance name."),
  AZURE_OPENAI_API_DEPLOYMENT_NAME: z.string().optional().describe("Azure deployment used as the executor model when MEDMMV_MODEL is unset."),
  AZURE_OPENAI_API_VERSION: z.string().default("2024-10-21").describe("Azure OpenAI API version."),
  LANGSMITH_TRACING: z.string().optional().describe("LangChain's own tracing switch, read here only to say at start-up that traces hold patient text."),
  TAVILY_API_KEY: z.string().optional().describe("Tavily API key for web literature search."),
  TAVILY_BASE_URL: z.string().url().default("https://api.tavily.com").describe("Tavily base URL (a proxy or a test server)."),
  MEDMMV_SEARCH: z.enum(["tavily", "local", "none"]).optional().describe("Search provider; unset: tavily with a key, else the local corpus when one is indexed, else none."),
  MEDMMV_K: z.coerce.number().int().min(1).max(32).default(5).describe("Number of diagnostic rollouts k."),
  MEDMMV_MAX_REPAIRS: z.coerce.number().int().min(0).max(10).default(3).describe("AutoRepair budget per path."),
  MEDMMV_ADAPTIVE: z.enum(["true", "false", "1", "0"]).default("false").describe("Adaptive rollouts by default (a request or a CLI flag may still choose): rollouts in rounds, stopping after the first 3 when they agree."),
  MEDMMV_COMPOSE_REPLY: z
    .enum(["true", "false", "1", "0"])
    .default("false")
    .describe("For open-ended questions, compose the verified reply a person reads (DiagnosisResult.reply) by default (a request may still choose): two more calls on the critical path, a composer and the hallucination detector."),
  MEDMMV_CU_WEIGHTS: csvNumbers(3).default([1, 1, 1]).describe("Combined Uncertainty weights w_e,w_c,w_r (three comma-separated non-negative numbers)."),
  MEDMMV_MAX_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(16).describe("Model calls in flight, shared fairly between cases: across every replica with REDIS_URL, per process without."),
  MEDMMV_ROLLOUT_TEMPERATURE: z.coerce.number().min(0).max(2).default(0.7).describe("Sampling temperature of the k rollouts; judges run at 0."),
  MEDMMV_LLM_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000).describe("Per-attempt timeout of a model call (closes the connection)."),
  MEDMMV_LLM_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(5).describe("Attempts per model call (the only retry layer)."),
  MEDMMV_LLM_MAX_RETRY_AFTER_MS: z.coerce.number().int().min(0).default(60_000).describe("The longest Retry-After we are willing to wait; beyond it the call fails at once as retryable."),
  MEDMMV_LLM_BACKOFF_BASE_MS: z.coerce.number().int().min(0).default(500).describe("Base delay of the backoff between model-call attempts."),
  MEDMMV_SEARCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000).describe("Per-attempt timeout of a search call."),
  MEDMMV_TERMINOLOGY_URL: z
    .string()
    .url()
    .optional()
    .describe("A FHIR terminology server's base URL: each diagnosis of the differential is looked up there (`ValueSet/$expand?filter=`) and coded only with what the server returns. Unset: no coding. Only the diagnosis wording is sent."),
  MEDMMV_TERMINOLOGY_VALUESET: z
    .string()
    .min(1)
    .default("http://snomed.info/sct?fhir_vs=isa/404684003")
    .describe("The value set the differential is coded from (its canonical URL; default SNOMED CT clinical findings; e.g. an ICD-10-CM value set)."),
  MEDMMV_TERMINOLOGY_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000).describe("Timeout of one terminology lookup."),
  MEDMMV_MAX_SEARCH_PAIRS: z.coerce.number().int().min(0).max(8).default(8).describe("Most pairs of facts WebSearch looks up per case."),
  MEDMMV_PRICES: z.string().optional().describe("JSON object: { \"model-name\": { \"input\": usdPerMTok, \"cachedInput\": usdPerMTok, \"output\": usdPerMTok } } (cachedInput optional: the rate of prompt tokens the provider served from its prompt cache; unset, they cost `input`), for costUsd in usage."),
  MEDMMV_PRICES_FILE: z.string().optional().describe("A JSON file of prices in the MEDMMV_PRICES format; MEDMMV_PRICES entries override its models."),
  MEDMMV_CASE_MAX_TOKENS: z.coerce.number().int().min(1).optional().describe("Per-case token budget (prompt + completion) when a request names none: once a case has used it, its remaining repairs are skipped and the result says budgetExhausted."),
  MEDMMV_CASE_MAX_COST_USD: z.coerce.number().positive().optional().describe("Per-case cost budget in USD when a request names none (needs prices for the models); like MEDMMV_CASE_MAX_TOKENS."),
  MEDMMV_IMAGE_DETAIL: z
    .string()
    .regex(/^(auto|low|high)$|^((executor|vision|judge)=(auto|low|high))(,(executor|vision|judge)=(auto|low|high))*$/, "auto, low or high, or per role: vision=high,executor=low,judge=low")
    .default("auto")
    .describe("OpenAI's image `detail` sent with every image: one value for all roles, or per role (vision=high,executor=low,judge=low; unnamed roles auto). auto leaves it to the provider."),
  MEDMMV_CACHE: z.enum(["off", "deterministic", "all"]).default("deterministic").describe("Response cache: off, deterministic (temperature-0 calls) or all (also the sampled rollouts)."),
  DATABASE_URL: z.string().optional().describe("PostgreSQL URL (postgres://…); unset: embedded SQLite under MEDMMV_DATA_DIR."),
  REDIS_URL: z.string().url().optional().describe("Redis URL (redis://…) of the case engine (BullMQ) shared by several replicas: job queue, cancel and events across replicas, one provider budget, one rate-limit budget per key. Unset: one process runs its own cases."),
  MEDMMV_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,64}$/)
    .optional()
    .describe(
      "Prefix of every Redis key and channel the service uses, so several deployments (or test runs) can share one Redis. Unset: `medmmv-` and a hash of the store's location (DATABASE_URL's host, port and database as the driver resolves them, PGHOST, PGPORT and PGDATABASE filling what the URL leaves out, or MEDMMV_DATA_DIR with links followed), so each deployment has its own queue; set it when replicas reach one database under different addresses.",
    ),
  MEDMMV_ENGINE_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(32).describe("Cases one replica runs at once with REDIS_URL (the BullMQ worker's concurrency); more wait in the queue."),
  MEDMMV_MAX_RUN_STARTS: z.coerce.number().int().min(1).max(100).default(3).describe("How often a case's run may start (a process that died mid-case, a stalled job) before the case fails with RUN_CRASHED instead of taking down the next process too."),
  MEDMMV_ENGINE_LOCK_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000).describe("BullMQ job lock with REDIS_URL: a replica that stops renewing it (killed, frozen) has its cases picked up by another after about this long."),
  MEDMMV_RECONCILE_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000).describe("How often, with REDIS_URL, unfinished cases in the store that the queue does not know (a Redis that lost its data) are queued again."),
  MEDMMV_PROVIDER_RPM: z.coerce.number().int().min(1).optional().describe("Model requests per minute per endpoint, across every replica with REDIS_URL (per process without); unset: no per-minute cap."),
  MEDMMV_METRICS_TOKEN: z.string().min(16).optional().describe("Bearer token of GET /metrics (Prometheus); unset: /metrics is not served. Not an API key: it sees no cases."),
  MEDMMV_PATHWAYS_DIR: z
    .string()
    .min(1)
    .optional()
    .describe("A directory of extra clinical pathways (ID.json each), named by id in requests beside the bundled ones in pathways/; an id may not be in both."),
  MEDMMV_DATA_DIR: z.string().default("./data").describe("Data directory: the SQLite store (medmmv.sqlite) and the demo's store."),
  MEDMMV_AUDIT_SIGNING_KEY: z.string().optional().describe("Key that signs every access-trail event, kept outside the store (a secret store, the orchestrator's secrets): an Ed25519 private key in PEM (`openssl genpkey -algorithm ed25519`) or a secret of at least 32 characters (HMAC-SHA256). With it, `medmmv audit verify` (given the same key) names every event removed, invented or re-hashed by someone who can write the store but does not hold the key. Unset: events are hash-chained only (docs/operations.md#access-trail)."),
  MEDMMV_AUDIT_SIGNING_KEY_FILE: z.string().min(1).optional().describe("A file holding MEDMMV_AUDIT_SIGNING_KEY (a mounted secret); set one or the other."),
  MEDMMV_API_KEYS: z.string().optional().describe(`Comma-separated API keys for the HTTP API (each key sees only its own cases), each at least ${MIN_SECRET_CHARS} characters. Without keys the server listens on loopback only.`),
  MEDMMV_API_KEYS_FILE: z.string().min(1).optional().describe("A JSON file of API keys with teams and roles: an array of { id, sha256 (hex SHA-256 of the key; the file holds no secret), tenant, roles: [clinician | auditor | admin] }. Used beside MEDMMV_API_KEYS, whose keys stay clinicians, each its own tenant."),
  MEDMMV_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional().describe("Days a case's content (input, images, result, graphs, events, turns) is kept; older cases are purged once a day and at start, their access trail kept. Unset: kept until deleted."),
  MEDMMV_RATE_LIMIT_PER_MIN: z.coerce.number().int().min(1).default(60).describe("Requests per minute per API key, one budget over the API, audit-view and CDS Hooks routes (per process; across replicas with REDIS_URL)."),
  MEDMMV_AUTH_FAILURES_PER_MIN: z.coerce.number().int().min(1).default(10).describe("Failed authentications per minute per client address (wrong key, bad view link, bad JWT), on every route; past it 429."),
  MEDMMV_TRUST_PROXY: z.string().default("false").describe("Trust X-Forwarded-For from a reverse proxy: false (default), true (any hop: only when nothing else can reach the port), a hop count, or comma-separated proxy addresses/CIDRs. Decides the client address that failed-login budgets count by."),
  MEDMMV_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).default(60_000).describe("Longest time to receive a whole request (headers and body); a slower client is cut off."),
  MEDMMV_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).default(10_000).describe("Longest time to receive a request's headers."),
  MEDMMV_CONNECTION_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000).describe("A connection with no bytes either way for this long is closed (must exceed the longest synchronous POST /diagnose)."),
  MEDMMV_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000).describe("How long an idle keep-alive connection waits for its next request."),
  MEDMMV_MAX_EVENT_STREAMS_PER_KEY: z.coerce.number().int().min(1).default(20).describe("Open event streams (GET /cases/{id}/events) per API key and process; past it 429."),
  MEDMMV_MAX_VIEW_LINK_STREAMS_PER_KEY: z.coerce.number().int().min(1).default(5).describe("Open event streams through view links (the live audit page's, GET /cases/{id}/view/events?token=…) per API key and process, all of that key's links together; past it 429. A pool apart from MEDMMV_MAX_EVENT_STREAMS_PER_KEY, so link holders cannot use up the key's own streams."),
  MEDMMV_MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(25 * 1024 * 1024).describe("Largest request body."),
  MEDMMV_MAX_IMAGE_BYTES: z.coerce.number().int().min(1024).default(10 * 1024 * 1024).describe("Largest image, per image."),
  MEDMMV_MAX_IMAGE_PIXELS: z.coerce.number().int().min(1).default(40_000_000).describe("Most pixels per image (all frames together), checked by the decoder against every frame header before it allocates."),
  MEDMMV_MAX_IMAGE_DECODED_BYTES: z.coerce.number().int().min(1024).default(100_000_000).describe("Most bytes the decoded pixels of one image may take (width × height × frames × channels × bytes per sample); past it the image is refused with 413."),
  MEDMMV_DICOM_MAX_FRAMES: z.coerce.number().int().min(1).max(16).default(4).describe("Frames rendered per multi-frame DICOM object (evenly spaced, first and last included)."),
  MEDMMV_DICOMWEB_SERVERS: z.string().optional().describe("DICOMweb base URLs (comma-separated) that `dicomweb` image references and FHIR ImagingStudy endpoints may be fetched from; none by default, and others are never contacted."),
  MEDMMV_DICOMWEB_MAX_INSTANCES: z.coerce.number().int().min(1).max(16).default(4).describe("Instances fetched from one DICOMweb series (evenly spaced by InstanceNumber)."),
  MEDMMV_DICOMWEB_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000).describe("Per-attempt timeout of a DICOMweb request, body included (3 attempts on 429, 5xx, network errors and bodies cut short)."),
  MEDMMV_DICOMWEB_TENANT_SERVERS: z.string().optional().describe('JSON object: for an API key (its sha256, hex) the DICOMweb servers it may have fetched without an accessToken of its own, with this service\'s standing, e.g. {"<sha256>":["https://pacs.example.org/dicom-web"]}. Otherwise an API-key caller must send dicomweb.accessToken (403).'),
  MEDMMV_DICOM_DECODE_WORKERS: z.coerce.number().int().min(1).max(16).default(2).describe("Threads decoding DICOM at once (each with its own heap limit; tenants are served in turn)."),
  MEDMMV_DICOM_DECODE_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000).describe("Most time one DICOM object may hold a decoding thread (parse and every rendering); past it the object is refused with 422 and the thread replaced."),
  MEDMMV_IMAGE_MODEL_LONG_SIDE: z.coerce.number().int().min(0).max(16_384).default(1536).describe("Long side (pixels) images are resized to, keeping aspect, before they are sent to a model; the original stays in the store and the audit view. 0 sends originals."),
  MEDMMV_VIEW_LINK_SECRET: z.string().min(MIN_SECRET_CHARS, `must be at least ${MIN_SECRET_CHARS} characters (e.g. openssl rand -base64 32)`).optional().describe(`Secret that signs audit-view links, at least ${MIN_SECRET_CHARS} characters; set it so links survive restarts (unset: a random one, shared by the workers of one \`serve --workers N\`).`),
  MEDMMV_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info").describe("Log level of the JSON logs (which never contain case content)."),
  PORT: z.coerce.number().int().min(0).max(65535).default(8787).describe("HTTP listen port."),
  MEDMMV_WORKERS: z.coerce.number().int().min(1).max(256).default(1).describe("Server processes for `medmmv serve` (one per core to use); they share the port and the store, and more than one needs REDIS_URL."),
  HOST: z.string().default("127.0.0.1").describe("HTTP listen address; anything but loopback requires MEDMMV_API_KEYS."),
  MEDMMV_PUBLIC_URL: z.string().url().optional().describe("This service's public base URL, as EHRs call it: the only source of the CDS Hooks JWT audience (required with MEDMMV_CDS_JWKS) and the base of card links (unset: links use the request's own host, for API-key callers only)."),
  MEDMMV_FHIR_SERVERS: z.string().optional().describe("FHIR servers (base URLs, comma-separated) that CDS Hooks calls may have us fetch missing prefetch from."),
  MEDMMV_CDS_EMPTY_RECORD: z
    .enum(["no-cards", "422"])
    .default("no-cards")
    .describe("What a CDS Hooks patient-view call whose prefetch holds nothing to analyse gets: `no-cards` answers {\"cards\": []} (CDS Hooks allows it; an EHR shows a 4xx as a failing service) with the reason in the server log; `422` refuses it, saying why."),
  MEDMMV_PSEUDONYM_SECRET: z
    .string()
    .min(MIN_SECRET_CHARS, `must be at least ${MIN_SECRET_CHARS} characters (e.g. openssl rand -base64 32)`)
    .optional()
    .describe(`Secret the patient pseudonyms of FHIR records are keyed with (HMAC-SHA256), at least ${MIN_SECRET_CHARS} characters; set the same one on every replica (unset: one is generated and kept in MEDMMV_DATA_DIR/pseudonym-secret).`),
  MEDMMV_FHIR_NOTES_BUDGET: z.coerce.number().int().min(2_000).max(400_000).default(FHIR_DEFAULTS.notesBudget).describe("Characters of notes a FHIR record is summarised into (every model call of a case carries them): active problems, allergies and medications first, then the latest of each vital and lab with earlier readings, recent encounters, procedures, immunizations, reports and notes, then history."),
  MEDMMV_FHIR_MAX_RESOURCES: z.coerce.number().int().min(1).max(1_000_000).default(FHIR_DEFAULTS.maxResources).describe("Most resources of the types read in one FHIR Bundle (Claims, Provenance and other types not read are not counted); the body's size is bounded by MEDMMV_MAX_BODY_BYTES."),
  MEDMMV_FHIR_MAX_DEPTH: z.coerce.number().int().min(8).max(1_000).default(FHIR_DEFAULTS.maxDepth).describe("Deepest nesting of objects and arrays in one FHIR resource; deeper bundles are refused with an OperationOutcome."),
  MEDMMV_CDS_JWKS: z.string().optional().describe("The EHR's JWKS for CDS Hooks JWTs: an https URL or a local JWKS file."),
  MEDMMV_CDS_ISSUERS: z.string().optional().describe("Accepted `iss` of CDS Hooks JWTs (comma-separated); required with MEDMMV_CDS_JWKS."),
  MEDMMV_CDS_ISSUERS_FILE: z.string().min(1).optional().describe("A JSON file of the EHRs that may call CDS Hooks, each with its own keys: an array of { iss, jwks (https URL or local JWKS file), tenant }. A token is checked against its issuer's JWKS only, so one EHR's key cannot sign as another. Replaces MEDMMV_CDS_JWKS and MEDMMV_CDS_ISSUERS."),
  MEDMMV_CORS_ORIGINS: z.string().optional().describe("Browser origins (comma-separated) allowed to call the CDS Hooks endpoints, e.g. the CDS Hooks sandbox; none by default."),
});

/** USD per million tokens, per model; `cachedInput` for prompt tokens served from the provider's prompt cache. */
/** USD per million tokens, with where each price comes from (`source`) and when it was read (`asOf`, where known). */
export type Prices = Record<string, { input: number; output: number; cachedInput?: number; source?: string; asOf?: string }>;
export type ImageDetail = "auto" | "low" | "high";
// `source` and `asOf`: where the price comes from and when it was read (the provider's price page and its date); said in provenance.
const PriceTable = z.record(z.string(), z.object({ input: z.number().min(0), output: z.number().min(0), cachedInput: z.number().min(0).optional(), source: z.string().optional(), asOf: z.string().optional() }).strict());

export interface Config {
  llm: {
    baseUrl: string | null;
    apiKey: string | null;
    models: { executor: string | null; vision: string | null; judge: string | null };
    structuredOutput: "jsonSchema" | "functionCalling" | "jsonMode";
    /** Azure OpenAI instead of an OpenAI-compatible endpoint; each role's model name is its deployment. */
    azure: { apiKey: string; instanceName: string | null; endpoint: string | null; apiVersion: string } | null;
    /** LANGSMITH_TRACING=true: LangChain sends every model run (prompts included) to LangSmith. */
    tracing: boolean;
    timeoutMs: number;
    maxAttempts: number;
    maxRetryAfterMs: number;
    backoffBaseMs: number;
    maxConcurrency: number;
    /** Model requests per minute per endpoint (across replicas with REDIS_URL); null: no cap. */
    requestsPerMin: number | null;
    rolloutTemperature: number;
    prices: Prices;
    cache: "off" | "deterministic" | "all";
    /** OpenAI's image `detail` per role ("auto": not sent). */
    imageDetail: Record<"executor" | "vision" | "judge", ImageDetail>;
    /** Per-model overrides of the catalog's profile (model-profile.ts). */
    profiles?: ModelProfileOverrides;
    /** reasoning_effort per role, sent to reasoning models only; null: the model's default. */
    reasoningEffort?: Record<"executor" | "vision" | "judge", ReasoningEffort | null>;
    /** anthropic:… models (Messages API): key and base URL (null: the SDK's default, api.anthropic.com). */
    anthropic: { apiKey: string | null; baseUrl: string | null };
    /** google-genai:… models (Gemini API): key and base URL (null: the SDK's default). */
    google: { apiKey: string | null; baseUrl: string | null };
    /** bedrock:… models (Converse API): region and endpoint (null: the SDK's default for the region); credentials from the AWS chain. */
    bedrock?: { region: string | null; endpoint: string | null };
    /** google-vertexai:… models (Gemini and Claude on Vertex AI): project (null: not set, a configuration error at the first call), location and API host (null: the location's); credentials from ADC. */
    vertex?: { project: string | null; location: string | null; endpoint: string | null };
    /** A role's own endpoint and key, overriding its provider's for that role only (null: the provider's). */
    roleEndpoints: Record<"executor" | "vision" | "judge", { baseUrl: string | null; apiKey: string | null }>;
    /** Models the k rollouts are spread over, round-robin; empty: all on the executor's. */
    rolloutModels: string[];
  };
  search: {
    /** Known at boot; "none" with `auto` may still become "local" once the store shows an indexed corpus. */
    provider: "tavily" | "local" | "none";
    /** MEDMMV_SEARCH was not set: the provider was chosen by the defaults. */
    auto: boolean;
    apiKey: string | null;
    baseUrl: string;
    timeoutMs: number;
    maxPairs: number;
  };
  /** FHIR terminology coding of the differential (absent or url null: none). */
  terminology?: { url: string | null; valueSet: string; timeoutMs: number };
  pipeline: {
    k: number;
    maxRepairs: number;
    adaptive: boolean;
    /** Compose the verified reply of open-ended questions by default (absent: off). */
    composeReply?: boolean;
    weights: [number, number, number];
    /** The per-case budget of a request that names none (null: unlimited). */
    caseBudget: { maxTokens: number | null; maxCostUsd: number | null };
  };
  /** `auditSigningKey`: MEDMMV_AUDIT_SIGNING_KEY(_FILE)'s text, held by the process, never written to the store. */
  store: { databaseUrl: string | null; dataDir: string; auditSigningKey: string | null };
  /**
   * How cases are run: by this process alone (redisUrl null), or by BullMQ workers on Redis across
   * replicas. `deployment`: which store this process serves (src/core/deployment-identity.ts), the
   * tag of the jobs it queues.
   */
  engine: { redisUrl: string | null; prefix: string; deployment: string; concurrency: number; maxRunStarts: number; lockMs: number; reconcileMs: number };
  metrics: { token: string | null };
  http: {
    host: string;
    port: number;
    workers: number;
    apiKeys: string[];
    /** MEDMMV_API_KEYS_FILE's keys (digests, teams and roles); empty without it. */
    keyFile: ApiKeyEntry[];
    rateLimitPerMin: number;
    maxBodyBytes: number;
    maxImageBytes: number;
    maxImagePixels: number;
    maxImageDecodedBytes: number;
    viewLinkSecret: string | null;
    authFailuresPerMin: number;
    /** Fastify's trustProxy: false, true, a hop count, or proxy addresses. */
    trustProxy: boolean | number | string[];
    timeouts: { requestMs: number; headersMs: number; connectionMs: number; keepAliveMs: number };
    maxEventStreamsPerKey: number;
    maxViewLinkStreamsPerKey: number;
  };
  redis: { url: string | null };
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  cds: {
    publicUrl: string | null;
    fhirServers: string[];
    jwks: string | null;
    issuers: string[];
    /** Each accepted issuer with the JWKS its tokens must verify against and its tenant (null: the issuer is its own tenant). */
    issuerKeys: Array<{ iss: string; jwks: string; tenant: string | null }>;
    corsOrigins: string[];
    emptyRecord: "no-cards" | "422";
  };
  /** Days case content is kept (null: until deleted). */
  retention: { days: number | null };
  images: {
    modelLongSide: number;
    dicomMaxFrames: number;
    dicomweb: { servers: string[]; maxInstances: number; timeoutMs: number; attempts: number };
    /** API key sha256 → DICOMweb servers it may use without a token of its own. */
    dicomwebTenantServers: Record<string, string[]>;
    decodePool: { size: number; objectTimeoutMs: number };
  };
  fhir: { notesBudget: number; maxResources: number; maxDepth: number; pseudonymSecret?: string };
}

/**
 * MEDMMV_PATHWAYS_DIR alone, for the pathway registry: pathways are resolved deep inside
 * intake, the workflow and the conversation turns, which receive a case, not a Config.
 */
export function pathwaysDirFromEnv(env: Record<string, string | undefined> = process.env): string | null {
  const parsed = EnvSchema.shape.MEDMMV_PATHWAYS_DIR.safeParse(env["MEDMMV_PATHWAYS_DIR"] || undefined);
  return parsed.success ? (parsed.data ?? null) : null;
}

/** `config` with models.dev's prices added for `models` it does not price yet (what the configuration states wins). */
export function withCatalogPrices(config: Config, models: readonly string[]): Config {
  const missing = models.filter((m) => !priceOf(config.llm.prices, m));
  if (!missing.length) return config;
  return { ...config, llm: { ...config.llm, prices: { ...catalogPrices(missing), ...config.llm.prices } } };
}

/** The models (null: none configured) that have no price: their calls would cost 0 against a dollar budget. */
export function unpricedModels(models: ReadonlyArray<string | null>, prices: Prices): string[] {
  return [...new Set(models)].filter((m): m is string => m !== null && !priceOf(prices, m));
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings from shells/compose files mean "unset".
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new MedmmvError("CONFIG_INVALID", `invalid configuration: ${describeZodIssues(parsed.error).message}`);
  }
  const e = parsed.data;
  if (e.MEDMMV_CDS_ISSUERS_FILE && (e.MEDMMV_CDS_JWKS || e.MEDMMV_CDS_ISSUERS)) {
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: MEDMMV_CDS_ISSUERS_FILE replaces MEDMMV_CDS_JWKS and MEDMMV_CDS_ISSUERS; set one or the other");
  }
  // One JWKS for several issuers cannot tell whose key signed: EHR A's key could sign as EHR B.
  if (e.MEDMMV_CDS_JWKS && csvList(e.MEDMMV_CDS_ISSUERS).length > 1) {
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: MEDMMV_CDS_ISSUERS lists several issuers for the one MEDMMV_CDS_JWKS, so any of their keys could sign as any of them; give each EHR its own JWKS in MEDMMV_CDS_ISSUERS_FILE");
  }
  if (e.MEDMMV_CDS_ISSUERS_FILE && !e.MEDMMV_PUBLIC_URL) {
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: MEDMMV_CDS_ISSUERS_FILE is set but MEDMMV_PUBLIC_URL is not; set it to this service's base URL as the EHR calls it");
  }
  if (e.MEDMMV_CDS_JWKS && !csvList(e.MEDMMV_CDS_ISSUERS).length) {
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: MEDMMV_CDS_JWKS is set but MEDMMV_CDS_ISSUERS is empty; list the EHR issuers (iss) whose JWTs are accepted");
  }
  // The JWT audience is this service's URL as the EHR knows it. Taken from the request's Host
  // header it would be whatever the caller claims, so a token signed for another service
  // would be accepted here: it must be configured.
  if (e.MEDMMV_CDS_JWKS && !e.MEDMMV_PUBLIC_URL) {
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: MEDMMV_CDS_JWKS is set but MEDMMV_PUBLIC_URL is not; set it to this service's base URL as the EHR calls it (the CDS Hooks JWT audience is <MEDMMV_PUBLIC_URL>/cds-services/medmmv-diagnosis)");
  }
  const executor = e.MEDMMV_MODEL ?? (e.AZURE_OPENAI_API_KEY ? e.AZURE_OPENAI_API_DEPLOYMENT_NAME : undefined) ?? null;
  const configuredModels = [executor, e.MEDMMV_VISION_MODEL ?? executor, e.MEDMMV_JUDGE_MODEL ?? executor, ...csvList(e.MEDMMV_ROLLOUT_MODELS)];
  // models.dev's prices for the models it knows; MEDMMV_PRICES(_FILE) override them. An unknown model has none.
  const statedPrices: Prices = {
    ...(e.MEDMMV_PRICES_FILE ? parsePrices(readPricesFile(e.MEDMMV_PRICES_FILE), `MEDMMV_PRICES_FILE (${e.MEDMMV_PRICES_FILE})`, "MEDMMV_PRICES_FILE") : {}),
    ...(e.MEDMMV_PRICES ? parsePrices(e.MEDMMV_PRICES, "MEDMMV_PRICES", "MEDMMV_PRICES") : {}),
  };
  // A price stated for a model, under its full name or without its provider prefix, wins over the catalog's.
  const prices: Prices = { ...catalogPrices(configuredModels.filter((m) => m !== null && !priceOf(statedPrices, m))), ...statedPrices };
  if (e.MEDMMV_SEARCH === "tavily" && !e.TAVILY_API_KEY)
    throw new MedmmvError("CONFIG_MISSING", "MEDMMV_SEARCH=tavily needs TAVILY_API_KEY (or choose MEDMMV_SEARCH=local for the offline corpus, or none)");
  if (e.AZURE_OPENAI_API_KEY && !e.AZURE_OPENAI_API_INSTANCE_NAME && !e.AZURE_OPENAI_ENDPOINT)
    throw new MedmmvError("CONFIG_INVALID", "AZURE_OPENAI_API_KEY is set: also set AZURE_OPENAI_API_INSTANCE_NAME (the resource name) or AZURE_OPENAI_ENDPOINT (https://<resource>.openai.azure.com)");
  const apiKeys = csvList(e.MEDMMV_API_KEYS);
  const short = apiKeys.filter((k) => k.length < MIN_SECRET_CHARS).length;
  // The count, never the keys: this message is printed.
  if (short)
    throw new MedmmvError("CONFIG_INVALID", `invalid configuration: ${short} of the ${apiKeys.length} keys in MEDMMV_API_KEYS ${short === 1 ? "is" : "are"} shorter than ${MIN_SECRET_CHARS} characters; use long random keys (e.g. openssl rand -base64 32)`);
  const keyFile = e.MEDMMV_API_KEYS_FILE ? readApiKeysFile(e.MEDMMV_API_KEYS_FILE) : [];
  const issuerKeys = e.MEDMMV_CDS_ISSUERS_FILE
    ? readIssuersFile(e.MEDMMV_CDS_ISSUERS_FILE)
    : e.MEDMMV_CDS_JWKS
      ? csvList(e.MEDMMV_CDS_ISSUERS).map((iss) => ({ iss, jwks: e.MEDMMV_CDS_JWKS!, tenant: null }))
      : [];
  if (e.MEDMMV_CASE_MAX_COST_USD !== undefined) {
    // Unpriced calls cost 0: the default cost budget of every case would never be reached.
    const unpriced = unpricedModels(configuredModels, prices);
    if (unpriced.length) throw new MedmmvError("CONFIG_INVALID", `MEDMMV_CASE_MAX_COST_USD needs prices for ${unpriced.join(", ")} (MEDMMV_PRICES or MEDMMV_PRICES_FILE), or use MEDMMV_CASE_MAX_TOKENS`);
  }
  const rolloutModels = csvList(e.MEDMMV_ROLLOUT_MODELS);
  const roleEndpoints = {
    executor: { baseUrl: e.MEDMMV_EXECUTOR_BASE_URL?.replace(/\/+$/, "") ?? null, apiKey: e.MEDMMV_EXECUTOR_API_KEY ?? null },
    vision: { baseUrl: e.MEDMMV_VISION_BASE_URL?.replace(/\/+$/, "") ?? null, apiKey: e.MEDMMV_VISION_API_KEY ?? null },
    judge: { baseUrl: e.MEDMMV_JUDGE_BASE_URL?.replace(/\/+$/, "") ?? null, apiKey: e.MEDMMV_JUDGE_API_KEY ?? null },
  };
  assertProviderKeys(
    [
      { variable: "MEDMMV_MODEL", spec: executor, ...roleEndpoints.executor, role: "EXECUTOR" },
      { variable: "MEDMMV_VISION_MODEL", spec: e.MEDMMV_VISION_MODEL ?? executor, ...roleEndpoints.vision, role: "VISION" },
      { variable: "MEDMMV_JUDGE_MODEL", spec: e.MEDMMV_JUDGE_MODEL ?? executor, ...roleEndpoints.judge, role: "JUDGE" },
      ...rolloutModels.map((spec) => ({ variable: "MEDMMV_ROLLOUT_MODELS", spec, ...(spec === executor ? { ...roleEndpoints.executor, role: "EXECUTOR" } : { baseUrl: null, apiKey: null }) })),
    ],
    { anthropic: e.ANTHROPIC_API_KEY ?? null, "google-genai": e.GOOGLE_API_KEY ?? null, azure_openai: e.AZURE_OPENAI_API_KEY ?? null },
  );
  const w = e.MEDMMV_CU_WEIGHTS;
  return {
    llm: {
      baseUrl: e.OPENAI_BASE_URL ?? null,
      apiKey: e.OPENAI_API_KEY ?? null,
      models: { executor, vision: e.MEDMMV_VISION_MODEL ?? executor, judge: e.MEDMMV_JUDGE_MODEL ?? executor },
      structuredOutput: e.MEDMMV_STRUCTURED_OUTPUT,
      azure: e.AZURE_OPENAI_API_KEY
        ? { apiKey: e.AZURE_OPENAI_API_KEY, instanceName: e.AZURE_OPENAI_API_INSTANCE_NAME ?? null, endpoint: e.AZURE_OPENAI_ENDPOINT?.replace(/\/+$/, "") ?? null, apiVersion: e.AZURE_OPENAI_API_VERSION }
        : null,
      tracing: e.LANGSMITH_TRACING === "true",
      timeoutMs: e.MEDMMV_LLM_TIMEOUT_MS,
      maxAttempts: e.MEDMMV_LLM_MAX_ATTEMPTS,
      maxRetryAfterMs: e.MEDMMV_LLM_MAX_RETRY_AFTER_MS,
      backoffBaseMs: e.MEDMMV_LLM_BACKOFF_BASE_MS,
      maxConcurrency: e.MEDMMV_MAX_CONCURRENCY,
      requestsPerMin: e.MEDMMV_PROVIDER_RPM ?? null,
      rolloutTemperature: e.MEDMMV_ROLLOUT_TEMPERATURE,
      prices,
      cache: e.MEDMMV_CACHE,
      imageDetail: parseImageDetail(e.MEDMMV_IMAGE_DETAIL),
      profiles: {
        ...(e.MEDMMV_MODEL_PROFILES_FILE ? parseProfiles(readConfigFile(e.MEDMMV_MODEL_PROFILES_FILE, "MEDMMV_MODEL_PROFILES_FILE"), `MEDMMV_MODEL_PROFILES_FILE (${e.MEDMMV_MODEL_PROFILES_FILE})`) : {}),
        ...(e.MEDMMV_MODEL_PROFILES ? parseProfiles(e.MEDMMV_MODEL_PROFILES, "MEDMMV_MODEL_PROFILES") : {}),
      },
      reasoningEffort: parseReasoningEffort(e.MEDMMV_REASONING_EFFORT),
      anthropic: { apiKey: e.ANTHROPIC_API_KEY ?? null, baseUrl: e.ANTHROPIC_BASE_URL?.replace(/\/+$/, "") ?? null },
      google: { apiKey: e.GOOGLE_API_KEY ?? null, baseUrl: e.GOOGLE_GENAI_BASE_URL?.replace(/\/+$/, "") ?? null },
      bedrock: { region: e.AWS_REGION ?? e.AWS_DEFAULT_REGION ?? null, endpoint: e.MEDMMV_BEDROCK_ENDPOINT?.replace(/\/+$/, "") ?? null },
      vertex: { project: e.GOOGLE_CLOUD_PROJECT ?? null, location: e.GOOGLE_CLOUD_LOCATION ?? null, endpoint: e.MEDMMV_VERTEX_ENDPOINT?.replace(/^https:\/\//, "").replace(/\/+$/, "") ?? null },
      roleEndpoints,
      rolloutModels,
    },
    search: {
      provider: e.MEDMMV_SEARCH ?? (e.TAVILY_API_KEY ? "tavily" : "none"),
      auto: e.MEDMMV_SEARCH === undefined,
      apiKey: e.TAVILY_API_KEY ?? null,
      baseUrl: e.TAVILY_BASE_URL.replace(/\/+$/, ""),
      timeoutMs: e.MEDMMV_SEARCH_TIMEOUT_MS,
      maxPairs: e.MEDMMV_MAX_SEARCH_PAIRS,
    },
    terminology: { url: e.MEDMMV_TERMINOLOGY_URL?.replace(/\/+$/, "") ?? null, valueSet: e.MEDMMV_TERMINOLOGY_VALUESET, timeoutMs: e.MEDMMV_TERMINOLOGY_TIMEOUT_MS },
    pipeline: { k: e.MEDMMV_K, maxRepairs: e.MEDMMV_MAX_REPAIRS, adaptive: e.MEDMMV_ADAPTIVE === "true" || e.MEDMMV_ADAPTIVE === "1", composeReply: e.MEDMMV_COMPOSE_REPLY === "true" || e.MEDMMV_COMPOSE_REPLY === "1", weights: [w[0]!, w[1]!, w[2]!], caseBudget: { maxTokens: e.MEDMMV_CASE_MAX_TOKENS ?? null, maxCostUsd: e.MEDMMV_CASE_MAX_COST_USD ?? null } },
    store: storeOf(e),
    engine: {
      redisUrl: e.REDIS_URL ?? null,
      prefix: e.MEDMMV_REDIS_PREFIX ?? defaultRedisPrefix(storeOf(e), env),
      deployment: deploymentId(storeOf(e), env),
      concurrency: e.MEDMMV_ENGINE_CONCURRENCY,
      maxRunStarts: e.MEDMMV_MAX_RUN_STARTS,
      lockMs: e.MEDMMV_ENGINE_LOCK_MS,
      reconcileMs: e.MEDMMV_RECONCILE_MS,
    },
    metrics: { token: e.MEDMMV_METRICS_TOKEN ?? null },
    http: {
      host: e.HOST,
      port: e.PORT,
      workers: e.MEDMMV_WORKERS,
      apiKeys,
      keyFile,
      rateLimitPerMin: e.MEDMMV_RATE_LIMIT_PER_MIN,
      maxBodyBytes: e.MEDMMV_MAX_BODY_BYTES,
      maxImageBytes: e.MEDMMV_MAX_IMAGE_BYTES,
      maxImagePixels: e.MEDMMV_MAX_IMAGE_PIXELS,
      maxImageDecodedBytes: e.MEDMMV_MAX_IMAGE_DECODED_BYTES,
      viewLinkSecret: e.MEDMMV_VIEW_LINK_SECRET ?? null,
      authFailuresPerMin: e.MEDMMV_AUTH_FAILURES_PER_MIN,
      trustProxy: trustProxy(e.MEDMMV_TRUST_PROXY),
      timeouts: { requestMs: e.MEDMMV_REQUEST_TIMEOUT_MS, headersMs: Math.min(e.MEDMMV_HEADERS_TIMEOUT_MS, e.MEDMMV_REQUEST_TIMEOUT_MS), connectionMs: e.MEDMMV_CONNECTION_TIMEOUT_MS, keepAliveMs: e.MEDMMV_KEEP_ALIVE_TIMEOUT_MS },
      maxEventStreamsPerKey: e.MEDMMV_MAX_EVENT_STREAMS_PER_KEY,
      maxViewLinkStreamsPerKey: e.MEDMMV_MAX_VIEW_LINK_STREAMS_PER_KEY,
    },
    redis: { url: e.REDIS_URL ?? null },
    logLevel: e.MEDMMV_LOG_LEVEL,
    cds: {
      publicUrl: e.MEDMMV_PUBLIC_URL?.replace(/\/+$/, "") ?? null,
      fhirServers: csvList(e.MEDMMV_FHIR_SERVERS).map((u) => u.replace(/\/+$/, "")),
      jwks: e.MEDMMV_CDS_JWKS ?? null,
      issuers: issuerKeys.map((i) => i.iss),
      issuerKeys,
      corsOrigins: csvList(e.MEDMMV_CORS_ORIGINS),
      emptyRecord: e.MEDMMV_CDS_EMPTY_RECORD,
    },
    retention: { days: e.MEDMMV_RETENTION_DAYS ?? null },
    fhir: { notesBudget: e.MEDMMV_FHIR_NOTES_BUDGET, maxResources: e.MEDMMV_FHIR_MAX_RESOURCES, maxDepth: e.MEDMMV_FHIR_MAX_DEPTH, ...(e.MEDMMV_PSEUDONYM_SECRET ? { pseudonymSecret: e.MEDMMV_PSEUDONYM_SECRET } : {}) },
    images: {
      modelLongSide: e.MEDMMV_IMAGE_MODEL_LONG_SIDE,
      dicomMaxFrames: e.MEDMMV_DICOM_MAX_FRAMES,
      dicomweb: { servers: csvList(e.MEDMMV_DICOMWEB_SERVERS).map((u) => u.replace(/\/+$/, "")), maxInstances: e.MEDMMV_DICOMWEB_MAX_INSTANCES, timeoutMs: e.MEDMMV_DICOMWEB_TIMEOUT_MS, attempts: 3 },
      dicomwebTenantServers: e.MEDMMV_DICOMWEB_TENANT_SERVERS ? parseTenantServers(e.MEDMMV_DICOMWEB_TENANT_SERVERS) : {},
      decodePool: { size: e.MEDMMV_DICOM_DECODE_WORKERS, objectTimeoutMs: e.MEDMMV_DICOM_DECODE_TIMEOUT_MS },
    },
  };
}

/** MEDMMV_TRUST_PROXY as Fastify takes it; an unparseable value is refused rather than read as "trust nobody". */
function trustProxy(v: string): boolean | number | string[] {
  if (v === "false") return false;
  if (v === "true") return true;
  if (/^\d+$/.test(v)) return Number(v);
  const list = csvList(v);
  if (!list.length || list.some((a) => !/^[0-9A-Fa-f.:]+(\/\d{1,3})?$/.test(a)))
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: MEDMMV_TRUST_PROXY must be false, true, a hop count or comma-separated proxy addresses/CIDRs (e.g. 10.0.0.0/8)");
  return list;
}

function parseTenantServers(json: string): Record<string, string[]> {
  try {
    return z.record(z.string().regex(/^[0-9a-f]{64}$/), z.array(z.string().url())).parse(JSON.parse(json));
  } catch {
    throw new MedmmvError("CONFIG_INVALID", 'invalid configuration: MEDMMV_DICOMWEB_TENANT_SERVERS must be JSON like {"<sha256 of the API key, hex>":["https://pacs.example.org/dicom-web"]}');
  }
}

function parsePrices(json: string, source: string, variable: string): Prices {
  try {
    // A price that does not say where it came from is the operator's, through this variable.
    return Object.fromEntries(Object.entries(PriceTable.parse(JSON.parse(json))).map(([m, p]) => [m, { ...p, source: p.source ?? variable }]));
  } catch {
    throw new MedmmvError("CONFIG_INVALID", `${source} must be JSON like {"gpt-4o":{"input":2.5,"cachedInput":1.25,"output":10}} (USD per million tokens; cachedInput optional)`);
  }
}

function readPricesFile(file: string): string {
  return readConfigFile(file, "MEDMMV_PRICES_FILE");
}

function readConfigFile(file: string, variable: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new MedmmvError("CONFIG_INVALID", `${variable}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

function parseProfiles(json: string, source: string): ModelProfileOverrides {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new MedmmvError("CONFIG_INVALID", `${source} is not JSON; expected {"model-name":{"temperature":false,"imagesPerRequest":1,...}} (docs/models.md)`);
  }
  const parsed = ModelProfileOverrides.safeParse(value);
  if (!parsed.success) throw new MedmmvError("CONFIG_INVALID", `${source}: ${describeZodIssues(parsed.error).message} (docs/models.md lists the fields)`);
  return parsed.data;
}

function parseReasoningEffort(v: string | undefined): Record<"executor" | "vision" | "judge", ReasoningEffort | null> {
  const out: Record<"executor" | "vision" | "judge", ReasoningEffort | null> = { executor: null, vision: null, judge: null };
  if (!v) return out;
  if (!v.includes("=")) return { executor: v as ReasoningEffort, vision: v as ReasoningEffort, judge: v as ReasoningEffort };
  for (const pair of v.split(",")) {
    const [role, effort] = pair.split("=") as ["executor" | "vision" | "judge", ReasoningEffort];
    if (REASONING_EFFORTS.includes(effort)) out[role] = effort;
  }
  return out;
}

function parseImageDetail(v: string): Record<"executor" | "vision" | "judge", ImageDetail> {
  if (!v.includes("=")) return { executor: v as ImageDetail, vision: v as ImageDetail, judge: v as ImageDetail };
  const out: Record<"executor" | "vision" | "judge", ImageDetail> = { executor: "auto", vision: "auto", judge: "auto" };
  for (const pair of v.split(",")) {
    const [role, detail] = pair.split("=") as ["executor" | "vision" | "judge", ImageDetail];
    out[role] = detail;
  }
  return out;
}

function storeOf(e: { DATABASE_URL?: string; MEDMMV_DATA_DIR: string; MEDMMV_AUDIT_SIGNING_KEY?: string; MEDMMV_AUDIT_SIGNING_KEY_FILE?: string }): Config["store"] {
  if (e.MEDMMV_AUDIT_SIGNING_KEY && e.MEDMMV_AUDIT_SIGNING_KEY_FILE) {
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: set MEDMMV_AUDIT_SIGNING_KEY or MEDMMV_AUDIT_SIGNING_KEY_FILE, not both");
  }
  const auditSigningKey = e.MEDMMV_AUDIT_SIGNING_KEY_FILE ? readConfigFile(e.MEDMMV_AUDIT_SIGNING_KEY_FILE, "MEDMMV_AUDIT_SIGNING_KEY_FILE").trim() : (e.MEDMMV_AUDIT_SIGNING_KEY ?? null);
  return { databaseUrl: e.DATABASE_URL ?? null, dataDir: e.MEDMMV_DATA_DIR, auditSigningKey: auditSigningKey || null };
}

/** The variable that holds each keyed provider's key, for messages that say what to set. */
export const PROVIDER_KEY_VARIABLE: Record<Exclude<ModelProvider, "openai" | "bedrock" | "google-vertexai">, string> = {
  anthropic: "ANTHROPIC_API_KEY",
  "google-genai": "GOOGLE_API_KEY",
  azure_openai: "AZURE_OPENAI_API_KEY",
};

/**
 * Anthropic, Gemini and Azure refuse every request without a key: a model named for one of
 * them with no key anywhere is a configuration error at start, not a 401 on the first case.
 * A role with its own endpoint gets only its own key (a provider's key is never sent to
 * another endpoint), so such a role needs that key too. (An OpenAI-compatible server may
 * need none: vLLM and Ollama run keyless.)
 */
function assertProviderKeys(
  models: Array<{ variable: string; spec: string | null; baseUrl: string | null; apiKey: string | null; role?: string }>,
  keys: Record<Exclude<ModelProvider, "openai" | "bedrock" | "google-vertexai">, string | null>,
): void {
  for (const { variable, spec, baseUrl, apiKey, role } of models) {
    if (!spec) continue;
    const { provider } = parseModelSpec(spec);
    // Bedrock signs with the AWS credential chain's keys (SigV4), Vertex AI with Application Default Credentials: no API key to check.
    if (provider === null || provider === "openai" || provider === "bedrock" || provider === "google-vertexai" || apiKey !== null) continue;
    if (baseUrl !== null)
      throw new MedmmvError("CONFIG_MISSING", `MEDMMV_${role}_BASE_URL is set for ${spec}: set MEDMMV_${role}_API_KEY too (${PROVIDER_KEY_VARIABLE[provider]} is not sent to a role's own endpoint)`);
    if (keys[provider] === null) throw new MedmmvError("CONFIG_MISSING", `${variable} names ${spec}: set ${PROVIDER_KEY_VARIABLE[provider]}${role ? ` (or the role's own MEDMMV_${role}_API_KEY)` : ""}`);
  }
}

function csvList(v: string | undefined): string[] {
  return (v ?? "").split(",").map((s) => s.trim()).filter(Boolean);
}

/**
 * Several server processes coordinate through the case engine on Redis alone; without it
 * each would run (and resume at restart) cases the others run too.
 */
export function assertWorkersSupported(config: Config, workers: number): void {
  if (workers > 1 && !config.engine.redisUrl) {
    throw new MedmmvError("CONFIG_INVALID", `${workers} workers need REDIS_URL (the case engine they share); without it run one process (MEDMMV_WORKERS=1, no --workers)`);
  }
}

/** The endpoint is usable only when base URL (or key for OpenAI itself) and a model are set. */
export function assertLlmConfigured(config: Config): void {
  const missing: string[] = [];
  if (!config.llm.models.executor) missing.push("MEDMMV_MODEL");
  // The OpenAI-compatible endpoint is needed only by a model that goes there: a panel of
  // anthropic:… and google-genai:… models (keys checked at load) needs none.
  const l = config.llm;
  const usesOpenAIEndpoint = (["executor", "vision", "judge"] as const).some((role) => {
    const spec = l.models[role];
    const p = spec ? parseModelSpec(spec).provider : null;
    return spec !== null && (p === "openai" || (p === null && !l.azure)) && !l.roleEndpoints[role].baseUrl && !l.roleEndpoints[role].apiKey;
  }) || l.rolloutModels.some((spec) => {
    const p = parseModelSpec(spec).provider;
    return p === "openai" || (p === null && !l.azure);
  });
  if ((usesOpenAIEndpoint || !l.models.executor) && !l.baseUrl && !l.apiKey && !(l.azure && !l.models.executor)) missing.push("OPENAI_BASE_URL (or OPENAI_API_KEY for api.openai.com)");
  if (missing.length)
    throw new MedmmvError(
      "MODEL_NOT_CONFIGURED",
      `no model endpoint configured: set ${missing.join(" and ")}. Example: OPENAI_BASE_URL=http://localhost:8000/v1 MEDMMV_MODEL=Qwen2.5-VL-7B-Instruct (add OPENAI_API_KEY if the endpoint needs one). For Azure OpenAI set AZURE_OPENAI_API_KEY, AZURE_OPENAI_API_INSTANCE_NAME, AZURE_OPENAI_API_DEPLOYMENT_NAME and AZURE_OPENAI_API_VERSION. These are read at start.`,
    );
}
