import { MedmmvError } from "../../core/contracts/errors.js";
import { PREFETCH } from "./discovery.js";
import { readCappedBody } from "../../core/net/read-capped-body.js";

export interface FetchMissingOptions {
  fhirServer: string;
  accessToken: string | undefined;
  patientId: string;
  /** MEDMMV_FHIR_SERVERS: the only servers ever contacted. */
  allowList: readonly string[];
  timeoutMs?: number;
  /** The most bytes one answer may have; a larger one is refused without being read whole. */
  maxBytes?: number;
}

/** Is this FHIR base URL one the operator listed? Exact base match (trailing slashes aside). */
export function isAllowedFhirServer(fhirServer: string, allowList: readonly string[]): boolean {
  const base = fhirServer.replace(/\/+$/, "");
  return allowList.includes(base);
}

/** The body as UTF-8 text, refused as soon as it is declared or read past `maxBytes`. */
async function readBounded(res: Response, maxBytes: number, key: string): Promise<string> {
  const body = await readCappedBody(res, maxBytes);
  if (body === null) throw new MedmmvError("PAYLOAD_TOO_LARGE", `the FHIR server's answer for prefetch "${key}" is larger than ${maxBytes} bytes`);
  return body.toString("utf8");
}

/**
 * Fetch the prefetch the EHR did not send, from its FHIR server, with its token. Only a
 * server on the allow-list is contacted (private and loopback ones only because they are
 * listed): the caller checks, and a server not on it here is a programmer error.
 * Redirects are refused so an allowed server cannot send us elsewhere.
 */
export async function fetchMissingPrefetch(keys: readonly string[], o: FetchMissingOptions): Promise<Record<string, unknown>> {
  if (!isAllowedFhirServer(o.fhirServer, o.allowList)) throw new Error("fetchMissingPrefetch called for a fhirServer not on the allow-list");
  const base = o.fhirServer.replace(/\/+$/, "");
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const template = PREFETCH[key];
    if (!template) continue;
    const url = `${base}/${template.replaceAll("{{context.patientId}}", encodeURIComponent(o.patientId))}`;
    const res = await fetch(url, {
      headers: { accept: "application/fhir+json", ...(o.accessToken ? { authorization: `Bearer ${o.accessToken}` } : {}) },
      redirect: "error",
      signal: AbortSignal.timeout(o.timeoutMs ?? 5_000),
    }).catch((err: unknown) => {
      throw new MedmmvError("UNPROCESSABLE", `the FHIR server did not answer for prefetch "${key}"`, { cause: err });
    });
    if (!res.ok) throw new MedmmvError("UNPROCESSABLE", `the FHIR server answered ${res.status} for prefetch "${key}"; send the prefetch with the hook call`);
    const text = await readBounded(res, o.maxBytes ?? 10_000_000, key).catch((err: unknown) => {
      if (err instanceof MedmmvError) throw err;
      throw new MedmmvError("UNPROCESSABLE", `the FHIR server's answer for prefetch "${key}" was cut off`, { cause: err });
    });
    try {
      out[key] = JSON.parse(text) as unknown;
    } catch {
      throw new MedmmvError("UNPROCESSABLE", `the FHIR server's answer for prefetch "${key}" is not JSON`);
    }
  }
  return out;
}
