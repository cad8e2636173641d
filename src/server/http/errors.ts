import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../../core/config.js";
import { isMedmmvError, type ErrorCode } from "../../core/contracts/errors.js";
import { formatIssuePath } from "../../core/contracts/zod-issues.js";
import { FHIR_JSON, isFhirRequest } from "./fhir-requests.js";
import { serializeError } from "./logger.js";
import { operationOutcome } from "./operation-outcome.js";
import type { ErrorBody } from "./schemas.js";

/** The one mapping from error codes to HTTP statuses (docs/architecture.md#house-style). */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  INVALID_INPUT: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA: 415,
  UNPROCESSABLE: 422,
  RATE_LIMITED: 429,
  CONFIG_INVALID: 500,
  PIPELINE_FAILED: 500,
  RUN_CRASHED: 500,
  INTERNAL: 500,
  LLM_RETRYABLE: 502,
  LLM_FATAL: 502,
  LLM_BAD_OUTPUT: 502,
  CONTENT_FILTERED: 422,
  MODEL_REFUSED: 422,
  CONTEXT_TOO_LONG: 422,
  CONTEXT_TRUNCATED: 422,
  MODEL_NO_IMAGES: 422,
  QUOTA_EXCEEDED: 503,
  OUTPUT_TRUNCATED: 502,
  MODEL_PARAMETER_UNSUPPORTED: 502,
  SEARCH_FAILED: 502,
  CONFIG_MISSING: 503,
  MODEL_NOT_CONFIGURED: 503,
  STORE_FAILED: 503,
  ABORTED: 503,
  LLM_TIMEOUT: 504,
};

/** What a client sees for a 5xx: the status's meaning, never the internals. */
const SERVER_MESSAGES: Record<number, string> = {
  500: "internal error; the request id identifies it in the server logs",
  502: "the model endpoint failed; try again later",
  503: "the service is temporarily unavailable; try again later",
  504: "the model endpoint timed out; try again later",
};

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: "INVALID_INPUT",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  406: "INVALID_INPUT",
  409: "CONFLICT",
  412: "PRECONDITION_FAILED",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA",
  422: "UNPROCESSABLE",
  429: "RATE_LIMITED",
};

export interface HttpError {
  status: number;
  code: string;
  message: string;
  issues?: { path: string; message: string }[];
  details?: Record<string, unknown>;
  headers?: Record<string, string>;
}

interface ValidationIssue {
  instancePath?: string;
  message?: string;
}

function issuePath(context: string, instancePath: string | undefined): string {
  const parts = (instancePath ?? "").split("/").filter(Boolean).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  const inner = formatIssuePath(parts);
  const where = context === "querystring" ? "query" : context;
  return inner === "(root)" ? where : `${where}.${inner}`.replace(".[", "[");
}

/**
 * Turn anything thrown while handling a request into a status and a message that says
 * what to fix. Parser errors are rewritten: they quote the body they failed on.
 */
export function toHttpError(err: unknown, config: Config): HttpError {
  if (isMedmmvError(err)) {
    const status = STATUS_BY_CODE[err.code] ?? 500;
    const details = err.details && Object.keys(err.details).length ? err.details : undefined;
    const issues = Array.isArray(details?.issues) ? (details.issues as HttpError["issues"]) : undefined;
    const out: HttpError = { status, code: err.code, message: err.message };
    if (issues) out.issues = issues;
    if (details) out.details = Object.fromEntries(Object.entries(details).filter(([k]) => k !== "issues"));
    if (out.details && Object.keys(out.details).length === 0) delete out.details;
    if (err.code === "UNAUTHORIZED") out.headers = { "www-authenticate": 'Bearer realm="medmmv"' };
    return out;
  }
  const e = (err ?? {}) as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
  if (Array.isArray(e.validation)) {
    const context = e.validationContext ?? "body";
    const issues = e.validation.map((v) => ({ path: issuePath(context, v.instancePath), message: v.message ?? "invalid" }));
    return {
      status: 400,
      code: "INVALID_INPUT",
      message: `invalid request ${context === "querystring" ? "query" : context}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
      issues,
    };
  }
  switch (e.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return {
        status: 413,
        code: "PAYLOAD_TOO_LARGE",
        message: `the request body is larger than the limit of ${config.http.maxBodyBytes} bytes; send fewer or smaller images`,
        details: { maxBytes: config.http.maxBodyBytes },
      };
    case "FST_REQ_FILE_TOO_LARGE":
      return {
        status: 413,
        code: "PAYLOAD_TOO_LARGE",
        message: `an uploaded image is larger than the limit of ${config.http.maxImageBytes} bytes per image; send a smaller or more compressed image`,
        details: { maxBytes: config.http.maxImageBytes },
      };
    case "FST_FILES_LIMIT":
    case "FST_PARTS_LIMIT":
    case "FST_FIELDS_LIMIT":
      return { status: 413, code: "PAYLOAD_TOO_LARGE", message: "too many parts in the multipart upload: send one `case` field and at most 16 image files" };
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      // application/json+fhir is DSTU2's name for it; a FHIR client must learn R4's.
      return { status: 415, code: "UNSUPPORTED_MEDIA", message: "unsupported Content-Type; send the case as application/json or multipart/form-data, or a FHIR R4 Bundle as application/fhir+json" };
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return { status: 400, code: "INVALID_INPUT", message: "the request body is empty; send a ClinicalCase as JSON" };
    case "FST_INVALID_MULTIPART_CONTENT_TYPE":
      return { status: 400, code: "INVALID_INPUT", message: "the request is not valid multipart/form-data" };
  }
  if (e instanceof SyntaxError || e.code === "FST_ERR_CTP_INVALID_JSON_BODY") {
    // JSON.parse quotes the text around the error; only the position is safe to repeat.
    const at = /position (\d+)/.exec(String(e.message))?.[1];
    return { status: 400, code: "INVALID_INPUT", message: `the request body is not valid JSON${at ? ` (error at position ${at})` : ""}; check quoting, commas and brackets` };
  }
  const status = typeof e.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 600 ? e.statusCode : 500;
  if (status < 500) return { status, code: CODE_BY_STATUS[status] ?? "INVALID_INPUT", message: typeof e.message === "string" ? e.message.slice(0, 300) : "bad request" };
  return { status, code: "INTERNAL", message: "internal error" };
}

/**
 * 5xx codes whose own message is shown: it names what the operator must set (variable
 * names only, never their values), and retrying would never help.
 */
const OPERATOR_FIX_CODES: ReadonlySet<string> = new Set<ErrorCode>(["MODEL_NOT_CONFIGURED", "QUOTA_EXCEEDED"]);

export function errorBody(h: HttpError, requestId: string): ErrorBody {
  const message = h.status >= 500 && !OPERATOR_FIX_CODES.has(h.code) ? (SERVER_MESSAGES[h.status] ?? SERVER_MESSAGES[500]!) : h.message;
  const body: ErrorBody = { statusCode: h.status, code: h.code, message, requestId };
  if (h.status < 500) {
    if (h.issues) body.issues = h.issues;
    if (h.details) body.details = h.details;
  }
  return body;
}

export function sendError(request: FastifyRequest, reply: FastifyReply, err: unknown, config: Config): FastifyReply {
  const h = toHttpError(err, config);
  if (h.status >= 500) {
    // Internal failures are logged with their stack for the operator; client errors are
    // routine and logged by code only (their messages may echo what the client sent).
    const stack = !isMedmmvError(err) && err instanceof Error ? err.stack?.split("\n").slice(0, 8).join("\n") : undefined;
    request.log.error({ err: serializeError(err), code: h.code, statusCode: h.status, ...(stack ? { stack } : {}) }, "request failed");
  } else {
    request.log.info({ code: h.code, statusCode: h.status }, "request rejected");
  }
  if (h.headers) void reply.headers(h.headers);
  // A string payload skips the route's ErrorBody serializer: FHIR clients get an OperationOutcome.
  if (isFhirRequest(request)) return reply.status(h.status).type(`${FHIR_JSON}; charset=utf-8`).send(JSON.stringify(operationOutcome(errorBody(h, String(request.id)))));
  return reply.status(h.status).type("application/json; charset=utf-8").send(errorBody(h, String(request.id)));
}

export function registerErrorHandling(app: FastifyInstance, config: Config): void {
  app.setErrorHandler((err, request, reply) => sendError(request, reply, err, config));
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .send(errorBody({ status: 404, code: "NOT_FOUND", message: `no route ${request.method} ${request.url.split("?")[0]}; the API is described at /docs` }, String(request.id))),
  );
}

/**
 * Fastify's own answers to a URL it cannot route (a path parameter longer than
 * maxParamLength, a malformed percent-encoding) skip the error handler and echo the URL.
 * This gives them the JSON error body instead, without the URL: 414 for a too-long id.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const tooLong = error.code === "FST_ERR_MAX_PARAM_LENGTH";
  const h: HttpError = tooLong
    ? { status: 414, code: "INVALID_INPUT", message: `an id in the path is longer than ${MAX_PARAM_LENGTH} characters; case ids are UUIDs (as POST /diagnose returned them)` }
    : { status: 400, code: "INVALID_INPUT", message: "the URL is not valid (check its percent-encoding)" };
  request.log.info({ code: h.code, statusCode: h.status }, "request rejected");
  // No hook runs before a framework error: the request id header is set here.
  void reply.status(h.status).header("x-request-id", request.id).type("application/json; charset=utf-8").send(errorBody(h, String(request.id)));
}

/** Longest path parameter routed (Fastify's maxParamLength); longer ones get the 414 above. */
export const MAX_PARAM_LENGTH = 100;
