import { pino, type DestinationStream, type Logger } from "pino";
import type { Config } from "../../core/config.js";

/**
 * The service logger. Logs carry request ids, routes, statuses and error codes, never
 * patient data: bodies are not logged, requests and responses are reduced to a few safe
 * fields, errors to their type and code, and any field that could still carry case
 * content is censored by path as a second line of defence.
 */
export const REDACTED_PATHS = [
  "req.headers",
  "req.body",
  "body",
  "input",
  "case",
  "caseInput",
  "result",
  "notes",
  "question",
  "options",
  "images",
  "caption",
  "data",
  "*.body",
  "*.input",
  "*.case",
  "*.caseInput",
  "*.result",
  "*.notes",
  "*.question",
  "*.options",
  "*.images",
  "*.caption",
  "*.data",
  "headers.authorization",
  "*.headers.authorization",
];

interface LoggableRequest {
  method?: string;
  url?: string;
  routeOptions?: { url?: string };
}

/** Method and path only; query strings on this API hold no case content, but cap them anyway. */
function serializeRequest(req: LoggableRequest): Record<string, unknown> {
  return { method: req.method, url: typeof req.url === "string" ? req.url.slice(0, 300) : undefined };
}

function serializeResponse(res: { statusCode?: number }): Record<string, unknown> {
  return { statusCode: res.statusCode };
}

/**
 * Error type and code only. Messages are left out on purpose: parser errors quote the
 * body they failed on (JSON.parse puts a snippet of the input in its message), and that
 * body is a clinical case. The HTTP error handler logs what is safe to log itself.
 */
export function serializeError(err: unknown): Record<string, unknown> {
  if (!err || typeof err !== "object") return { type: typeof err };
  const e = err as { name?: unknown; code?: unknown; statusCode?: unknown };
  return {
    type: typeof e.name === "string" ? e.name : "Error",
    ...(typeof e.code === "string" ? { code: e.code } : {}),
    ...(typeof e.statusCode === "number" ? { statusCode: e.statusCode } : {}),
  };
}

export function createLogger(level: Config["logLevel"], destination?: DestinationStream): Logger {
  const options = {
    level,
    // The pid tells the processes of `serve --workers N` apart; the hostname is left out.
    base: { service: "medmmv", pid: process.pid },
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    serializers: { req: serializeRequest, res: serializeResponse, err: serializeError, error: serializeError },
  };
  return destination ? pino(options, destination) : pino(options);
}
