import type { FastifyInstance, FastifyRequest } from "fastify";
import { bundleToCaseYielding } from "../../core/intake/fhir/bundle-to-case.js";
import { fhirError } from "../../core/intake/fhir/fhir-error.js";
import { pseudonymSecret } from "../../core/intake/fhir/pseudonym-secret.js";
import { parseBundleInSlices } from "../../core/intake/fhir/sliced-json.js";
import { OptionLetter } from "../../core/contracts/clinical-case.js";
import type { Config } from "../../core/config.js";

export const FHIR_JSON = "application/fhir+json";
/** The R4 versions a `fhirVersion` media-type parameter may name (FHIR http.html#version-parameter). */
const R4_VERSIONS = new Set(["4.0", "4.0.0", "4.0.1"]);

declare module "fastify" {
  interface FastifyContextConfig {
    /** Errors of this route are FHIR OperationOutcomes whatever the request's Content-Type. */
    fhir?: boolean;
    /** This route parses an application/fhir+json body itself, in slices (fhirBundleToCase). */
    fhirInSlices?: boolean;
  }
}

function mediaType(header: string | undefined): { type: string; params: Map<string, string> } {
  const [type = "", ...rest] = (header ?? "").split(";");
  const params = new Map<string, string>();
  for (const p of rest) {
    const at = p.indexOf("=");
    if (at > 0) params.set(p.slice(0, at).trim().toLowerCase(), p.slice(at + 1).trim().replace(/^"|"$/g, ""));
  }
  return { type: type.trim().toLowerCase(), params };
}

/**
 * A FHIR client: it sent `application/fhir+json`, asked for it in Accept, or called a
 * FHIR route. Its errors are OperationOutcomes; every other client keeps the JSON error.
 */
export function isFhirRequest(request: FastifyRequest): boolean {
  if (mediaType(request.headers["content-type"]).type === FHIR_JSON) return true;
  if (request.routeOptions?.config?.fhir) return true;
  const accept = request.headers.accept;
  return typeof accept === "string" && accept.toLowerCase().includes(FHIR_JSON);
}

/**
 * The body of a route that reads FHIR Bundles in slices (`config.fhirInSlices`): kept as text by
 * the content-type parser, parsed by the route's preValidation without holding the event loop.
 */
class UnparsedFhirJson {
  constructor(
    readonly text: string,
    readonly parse: (json: string) => unknown,
  ) {}
}

/**
 * `application/fhir+json` bodies parse as JSON, with the same prototype-poisoning guard. On a
 * route that reads Bundles in slices the text is kept for it: one `JSON.parse` of a 25 MiB
 * record would hold the event loop (and /healthz) for hundreds of milliseconds.
 */
export function registerFhirJson(api: FastifyInstance): void {
  const parseJson = api.getDefaultJsonParser("error", "error");
  api.addContentTypeParser(FHIR_JSON, { parseAs: "string" }, (request, body, done) => {
    if (!request.routeOptions?.config?.fhirInSlices || typeof body !== "string" || !body.trim()) return parseJson(request, body as string, done);
    const parse = (json: string): unknown => {
      let out: unknown;
      parseJson(request, json, (err, value) => {
        if (err) throw err;
        out = value;
      });
      return out;
    };
    done(null, new UnparsedFhirJson(body, parse));
  });
}

/** `?option=A:Acute pericarditis` (repeated) → the case's answer options. */
function parseOptions(raw: unknown): Record<string, string> | undefined {
  if (raw === undefined) return undefined;
  const list = Array.isArray(raw) ? raw : [raw];
  const out: Record<string, string> = {};
  for (const [i, item] of list.entries()) {
    const m = typeof item === "string" ? /^([^:]*):\s*([\s\S]+)$/.exec(item) : null;
    if (!m || !OptionLetter.safeParse(m[1]).success || m[2]!.length > 5_000) {
      throw fhirError("INVALID_INPUT", [{ path: `option[${i}]`, message: 'each `option` query parameter is "LETTER:text", e.g. option=A:Acute pericarditis', fhirCode: "value" }]);
    }
    if (out[m[1]!] !== undefined) throw fhirError("INVALID_INPUT", [{ path: `option[${i}]`, message: `option ${m[1]} is given twice`, fhirCode: "duplicate" }]);
    out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/**
 * preValidation for POST /diagnose: a FHIR Bundle becomes the ClinicalCase the route
 * validates and runs, with the question (and options) from the query.
 */
export function fhirBundleToCase(config: Config) {
  return async (request: FastifyRequest): Promise<void> => {
    const { type, params } = mediaType(request.headers["content-type"]);
    if (type !== FHIR_JSON) {
      // A FHIR resource sent as plain JSON would fail as a ClinicalCase with errors that never say why.
      const body = request.body as { resourceType?: unknown } | null;
      if (body && typeof body === "object" && typeof body.resourceType === "string") {
        throw fhirError("UNSUPPORTED_MEDIA", [{ path: "(root)", message: `a FHIR ${body.resourceType.slice(0, 40)} was sent as ${type || "no Content-Type"}; send FHIR R4 Bundles as Content-Type: application/fhir+json`, fhirCode: "not-supported" }]);
      }
      return;
    }
    const version = params.get("fhirversion");
    if (version !== undefined && !R4_VERSIONS.has(version)) {
      throw fhirError("UNSUPPORTED_MEDIA", [{ path: "(root)", message: `fhirVersion=${version.slice(0, 20)} is not supported; send FHIR R4 (fhirVersion=4.0)`, fhirCode: "not-supported" }]);
    }
    const query = (request.query ?? {}) as Record<string, unknown>;
    const question = typeof query.question === "string" ? query.question : undefined;
    // Parsed and read in slices: a 25 MiB `$everything` record must not hold the event loop (/healthz, other requests).
    if (request.body instanceof UnparsedFhirJson) request.body = await parseBundleInSlices(request.body.text, request.body.parse);
    request.body = await bundleToCaseYielding(request.body, { question, options: parseOptions(query.option), maxImageBytes: config.http.maxImageBytes, ...config.fhir, pseudonymSecret: pseudonymSecret(config.fhir.pseudonymSecret, config.store.dataDir) });
  };
}
