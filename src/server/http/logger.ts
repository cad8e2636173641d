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
  params?: unknown;
  routeOptions?: { url?: string };
}

/** Case ids are UUIDs; a path parameter of any other shape could be anything a client typed. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Query parameter names are kept when they look like names; their values never are. */
const QUERY_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,39}$/;
const MAX_QUERY_NAMES = 20;

/**
 * The URL as it may be logged. Query strings can hold patient text (the FHIR operation
 * takes `question` and `option` in the query) and credentials (`?token=` of a view link, an
 * `api_key` a client put there by mistake), so every value is replaced and only the
 * parameter names stay. The path is the matched route's pattern with the case id filled in
 * when it is a UUID (`/cases/:id/view` otherwise); a path that matched no route is not
 * logged at all, only that it matched none.
 */
export function loggableUrl(req: LoggableRequest): string | undefined {
  if (typeof req.url !== "string") return undefined;
  const q = req.url.indexOf("?");
  const query = q < 0 ? "" : req.url.slice(q + 1);
  const pattern = req.routeOptions?.url;
  const params = (req.params ?? {}) as Record<string, unknown>;
  const path = pattern
    ? pattern.replace(/:([A-Za-z0-9_]+)/g, (whole, name: string) => {
        const v = params[name];
        return typeof v === "string" && UUID.test(v) ? v : whole;
      })
    : "(no route)";
  if (!query) return path;
  const names = query
    .split("&")
    .filter(Boolean)
    .slice(0, MAX_QUERY_NAMES)
    .map((pair) => {
      const name = safeDecode(pair.split("=", 1)[0]!);
      return `${QUERY_NAME.test(name) ? name : "[name]"}=[redacted]`;
    });
  return `${path}?${names.join("&")}`;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "));
  } catch {
    return s;
  }
}

/** Method and a redacted URL only (see loggableUrl). */
function serializeRequest(req: LoggableRequest): Record<string, unknown> {
  return { method: req.method, url: loggableUrl(req) };
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
