import { MedmmvError } from "../../contracts/errors.js";
import type { DicomwebRef } from "../../contracts/clinical-case.js";
import { withRetry } from "../../llm/retry.js";
import { readCappedBody, streamCappedBody } from "../../net/read-capped-body.js";
import { representativeFrames } from "./windows.js";

export interface DicomwebOptions {
  /** Base URLs (no trailing slash) that may be contacted; anything else is refused unseen. */
  servers: readonly string[];
  /** Instances fetched from the chosen series (evenly spaced by InstanceNumber beyond it). */
  maxInstances: number;
  /** Bytes of one instance (and of a QIDO answer). */
  maxBytes: number;
  timeoutMs: number;
  /** Attempts per request on a network error, 429 or 5xx. */
  attempts: number;
  /** The case's abort (the request's): ends the retries and any request in flight. */
  signal?: AbortSignal;
  /**
   * When set, the caller may not use this service's own standing: a reference without its
   * own accessToken is refused (403) unless its server is one of these (configured for the
   * caller's tenant). Unset for trusted callers (CLI, eval, an EHR that signed its call).
   */
  tokenlessServers?: readonly string[];
  /** The case's pictures still free: a series needing more instances is refused before any is fetched. */
  pictures?: { readonly left: number; readonly max: number };
}

/**
 * A DICOMweb root as one canonical string (scheme and host lower-cased, default port and
 * trailing slashes dropped, dot segments resolved), or null when it is not a plain http(s)
 * URL (credentials, a query or a fragment have no place in a root).
 */
export function normaliseDicomwebUrl(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if ((u.protocol !== "https:" && u.protocol !== "http:") || u.username || u.password || u.search || u.hash) return null;
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`;
}

/** The allow-listed root `server` names (compared after normalisation), or null. */
export function allowedDicomwebServer(server: string, allowList: readonly string[]): string | null {
  const wanted = normaliseDicomwebUrl(server);
  if (wanted === null) return null;
  return allowList.find((s) => normaliseDicomwebUrl(s) === wanted) ?? null;
}

export function isAllowedDicomwebServer(server: string, allowList: readonly string[]): boolean {
  return allowedDicomwebServer(server, allowList) !== null;
}

/** A UID as PS3.5 9.1 writes it: digits and dots, no leading zero in a component, at most 64 characters. */
const UID = /^(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*$/;
export function isDicomUid(v: unknown): v is string {
  return typeof v === "string" && v.length <= 64 && UID.test(v);
}

function refuse(code: "INVALID_INPUT" | "PAYLOAD_TOO_LARGE" | "UNPROCESSABLE" | "NOT_FOUND" | "FORBIDDEN", imageId: string, why: string, retryable = false): MedmmvError {
  return new MedmmvError(code, `image "${imageId}" (DICOMweb): ${why}`, { details: { imageId }, retryable });
}

/** An answer the server may give better on another attempt: its status (and Retry-After) for withRetry. */
class RetryableAnswer extends Error {
  constructor(
    readonly status: number,
    readonly headers: Headers,
  ) {
    super(`HTTP ${status}`);
  }
}

/**
 * GET with the caller's token, no redirects (an allowed server cannot send us elsewhere) and a
 * size cap, through the service's one retry layer (withRetry: full jitter, Retry-After, the
 * case's abort). Each attempt's timeout covers the whole answer, body included, so a body
 * that drips, stops short of its Content-Length or is reset is retried like a failed request.
 * Server answers are summarised by status only; their text is never echoed.
 */
async function get(url: string, accept: string, ref: DicomwebRef, o: DicomwebOptions, imageId: string): Promise<{ body: Buffer; contentType: string }> {
  return getRead(url, accept, ref, o, imageId, async (res) => {
    const body = await readCappedBody(res, o.maxBytes);
    return body === null ? null : { body, contentType: res.headers.get("content-type") ?? "" };
  });
}

/**
 * The same request, its answer's body handed to `read` (a fresh call for each attempt), which
 * reads at most o.maxBytes of it and returns null past them.
 */
async function getRead<T>(url: string, accept: string, ref: DicomwebRef, o: DicomwebOptions, imageId: string, read: (res: Response) => Promise<T | null>): Promise<T> {
  let problem = "";
  try {
    return await withRetry(`image "${imageId}" (DICOMweb)`, { maxAttempts: o.attempts, baseDelayMs: 200, maxRetryAfterMs: o.timeoutMs, timeoutMs: o.timeoutMs, failureCode: "UNPROCESSABLE" }, o.signal, async ({ signal }) => {
      let res: Response;
      try {
        res = await fetch(url, { headers: { accept, ...(ref.accessToken ? { authorization: `Bearer ${ref.accessToken}` } : {}) }, redirect: "error", signal });
      } catch (e) {
        problem = signal.aborted ? `no answer within ${o.timeoutMs} ms` : "the server could not be reached";
        throw e;
      }
      if (res.status === 429 || res.status >= 500) {
        await res.body?.cancel().catch(() => undefined);
        problem = `the server answered ${res.status}`;
        throw new RetryableAnswer(res.status, res.headers);
      }
      if (!res.ok) {
        await res.body?.cancel().catch(() => undefined);
        if (res.status === 404) throw refuse("NOT_FOUND", imageId, "the server has no such study, series or instance");
        throw refuse("UNPROCESSABLE", imageId, `the server answered ${res.status}${res.status === 401 || res.status === 403 ? " (check the access token)" : ""}`);
      }
      let body: T | null;
      try {
        body = await read(res);
      } catch (e) {
        // What the reader refuses (the answer is not what was asked for) is not retried.
        if (e instanceof MedmmvError && !signal.aborted) throw e;
        problem = signal.aborted ? `the answer's body did not arrive whole within ${o.timeoutMs} ms` : "the answer's body was cut off (the connection closed or reset before its end)";
        throw e;
      }
      if (body === null) throw refuse("PAYLOAD_TOO_LARGE", imageId, `an answer is larger than ${o.maxBytes} bytes`);
      return body;
    });
  } catch (e) {
    if (!(e instanceof MedmmvError) || e.code !== "UNPROCESSABLE") throw e;
    const details = (e.details ?? {}) as { attempts?: unknown; retryAfterMs?: unknown };
    if (typeof details.retryAfterMs === "number") throw refuse("UNPROCESSABLE", imageId, `the server asked to be retried after ${Math.round(details.retryAfterMs / 1000)} s, longer than MEDMMV_DICOMWEB_TIMEOUT_MS; try again later`, true);
    if (!problem || details.attempts === undefined) throw e;
    throw refuse("UNPROCESSABLE", imageId, `${problem}, after ${o.attempts} attempts`, true);
  }
}

export type QidoItem = Record<string, { vr?: string; Value?: unknown[] } | undefined>;

export function tagValue(item: QidoItem, tag: string): string | number | undefined {
  const v = item[tag]?.Value?.[0];
  return typeof v === "string" || typeof v === "number" ? v : undefined;
}

async function qido(url: string, ref: DicomwebRef, o: DicomwebOptions, imageId: string): Promise<QidoItem[]> {
  const { body } = await get(url, "application/dicom+json", ref, o, imageId);
  if (body.length === 0) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw refuse("UNPROCESSABLE", imageId, "the server's QIDO-RS answer is not JSON");
  }
  if (!Array.isArray(parsed)) throw refuse("UNPROCESSABLE", imageId, "the server's QIDO-RS answer is not a JSON array");
  return parsed.filter((x): x is QidoItem => typeof x === "object" && x !== null);
}

/**
 * The series of a study to read when none is named: the most recent (SeriesDate, SeriesTime),
 * then the one with most instances, then the lowest SeriesNumber — one rule, so the same
 * study always gives the same pictures.
 */
export function chooseSeries(series: QidoItem[]): string | undefined {
  const key = (s: QidoItem) => ({
    when: `${tagValue(s, "00080021") ?? ""}${tagValue(s, "00080031") ?? ""}`,
    count: Number(tagValue(s, "00201209") ?? 0),
    number: Number(tagValue(s, "00200011") ?? Number.MAX_SAFE_INTEGER),
  });
  const sorted = [...series].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return y.when.localeCompare(x.when) || y.count - x.count || x.number - y.number;
  });
  // A UID from the server becomes part of a path: only a well-formed one is taken.
  const uid = sorted.map((s) => tagValue(s, "0020000E")).find(isDicomUid);
  return uid;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(not a URL)";
  }
}

/** The Part 10 files of a multipart/related answer (WADO-RS), split on its boundary. */
export function splitMultipartRelated(body: Buffer, contentType: string): Buffer[] {
  const m = /boundary="?([^";]+)"?/i.exec(contentType);
  if (!m) return [];
  const delimiter = Buffer.from(`--${m[1]}`);
  const parts: Buffer[] = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString("latin1") === "--") break; // closing delimiter
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    const part = body.subarray(start, next);
    const headerEnd = part.indexOf("\r\n\r\n");
    if (headerEnd !== -1) {
      let content = part.subarray(headerEnd + 4);
      if (content.subarray(-2).toString("latin1") === "\r\n") content = content.subarray(0, -2);
      parts.push(content);
    }
    at = next;
  }
  return parts;
}

/** The SOP Class of a VL Whole Slide Microscopy image: one pyramid level per instance. */
export const WSI_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.77.1.6";

/** A located series: its URL under the configured root and its instances by InstanceNumber. */
export interface DicomwebSeries {
  imageId: string;
  ref: DicomwebRef;
  options: DicomwebOptions;
  /** `{root}/studies/{study}/series/{series}`, built from validated UIDs only. */
  url: string;
  instances: Array<{ uid: string; number: number; sopClassUid?: string }>;
}

/**
 * Where a DICOMweb reference points: the server checked against the allow-list (and the
 * caller's standing) before any request, the series chosen by QIDO-RS when not named, its
 * instances listed. Every UID from the server is validated before it becomes a path.
 */
export async function locateSeries(imageId: string, ref: DicomwebRef, o: DicomwebOptions): Promise<DicomwebSeries> {
  const allowed = allowedDicomwebServer(ref.server, o.servers);
  if (allowed === null) {
    throw new MedmmvError("INVALID_INPUT", `image "${imageId}" (DICOMweb): server ${originOf(ref.server)} is not in MEDMMV_DICOMWEB_SERVERS; it was not contacted`, { details: { imageId } });
  }
  if (o.tokenlessServers && !ref.accessToken && !isAllowedDicomwebServer(allowed, o.tokenlessServers)) {
    throw refuse("FORBIDDEN", imageId, "a caller authenticated by API key must send its own accessToken for the PACS (this service does not lend its own standing); send dicomweb.accessToken, or have the operator list the server for your key in MEDMMV_DICOMWEB_TENANT_SERVERS");
  }
  if (!isDicomUid(ref.study) || (ref.series !== undefined && !isDicomUid(ref.series))) throw refuse("INVALID_INPUT", imageId, "the study or series is not a DICOM UID");
  // Requests go to the configured root, never to the caller's spelling of it.
  const base = normaliseDicomwebUrl(allowed)!;
  const study = `${base}/studies/${ref.study}`;
  const series = ref.series ?? chooseSeries(await qido(`${study}/series`, ref, o, imageId));
  if (!series) throw refuse("NOT_FOUND", imageId, "the study has no series (with a well-formed SeriesInstanceUID)");
  const url = `${study}/series/${series}`;
  const instances = (await qido(`${url}/instances`, ref, o, imageId))
    .map((i) => ({ uid: tagValue(i, "00080018"), number: Number(tagValue(i, "00200013") ?? 0), sopClassUid: tagValue(i, "00080016") }))
    .filter((i): i is { uid: string; number: number; sopClassUid: string | undefined } => isDicomUid(i.uid))
    .map(({ sopClassUid, ...i }) => (typeof sopClassUid === "string" ? { ...i, sopClassUid } : i))
    .sort((a, b) => a.number - b.number || a.uid.localeCompare(b.uid));
  if (instances.length === 0) throw refuse("NOT_FOUND", imageId, "the series has no instances (with a well-formed SOPInstanceUID)");
  return { imageId, ref, options: o, url, instances };
}

/** Whether a located series holds whole-slide images (read as a pyramid, not instance by instance). */
export function isWholeSlideSeries(s: DicomwebSeries): boolean {
  return s.instances.some((i) => i.sopClassUid === WSI_SOP_CLASS);
}

/**
 * An instance's header as DICOM JSON (WADO-RS metadata), without its pixel data, handed to
 * `reader` chunk by chunk as it arrives (a fresh reader for each attempt) and never held whole:
 * at most `maxBytes` are read, and past them the answer is dropped at the chunk that crosses
 * them (413). Returns what the reader made of it and the bytes read.
 */
export async function instanceMetadataStreamed<T>(s: DicomwebSeries, uid: string, maxBytes: number, reader: () => { write(chunk: Uint8Array): void; end(): T }, tooLarge: string): Promise<{ value: T; bytes: number }> {
  const cap = Math.min(maxBytes, s.options.maxBytes);
  try {
    return await getRead(`${s.url}/instances/${uid}/metadata`, "application/dicom+json", s.ref, { ...s.options, maxBytes: cap }, s.imageId, async (res) => {
      const r = reader();
      const bytes = await streamCappedBody(res, cap, (chunk) => {
        try {
          r.write(chunk);
        } catch (e) {
          throw refuse("UNPROCESSABLE", s.imageId, e instanceof Error ? e.message : "an instance's metadata cannot be read");
        }
      });
      if (bytes === null) return null;
      try {
        return { value: r.end(), bytes };
      } catch (e) {
        throw refuse("UNPROCESSABLE", s.imageId, e instanceof Error ? e.message : "an instance's metadata cannot be read");
      }
    });
  } catch (e) {
    if (e instanceof MedmmvError && e.code === "PAYLOAD_TOO_LARGE") throw refuse("PAYLOAD_TOO_LARGE", s.imageId, tooLarge);
    throw e;
  }
}

/**
 * Frames of an instance by WADO-RS frame retrieval (`/frames/1,2,…`), in the order asked.
 * `stored` asks for the frames as the server holds them (`transfer-syntax=*`: JPEG tiles come
 * as JPEG); otherwise the server sends them uncompressed (explicit VR little endian).
 */
export async function instanceFrames(s: DicomwebSeries, uid: string, numbers: readonly number[], stored: boolean): Promise<{ parts: Buffer[]; transferSyntaxUid?: string }> {
  const accept = `multipart/related; type="application/octet-stream"${stored ? "; transfer-syntax=*" : ""}`;
  const { body, contentType } = await get(`${s.url}/instances/${uid}/frames/${numbers.join(",")}`, accept, s.ref, s.options, s.imageId);
  const parts = splitMultipartRelated(body, contentType);
  if (parts.length !== numbers.length) throw refuse("UNPROCESSABLE", s.imageId, `the frame answer holds ${parts.length} parts for ${numbers.length} frames asked`);
  // The syntax the frames are in, as the answer's type names it (e.g. type="image/jp2; transfer-syntax=1.2.840.10008.1.2.4.90").
  const ts = /transfer-syntax=([0-9.]+)/i.exec(contentType)?.[1];
  return { parts, ...(ts && isDicomUid(ts) ? { transferSyntaxUid: ts } : {}) };
}

/**
 * A located series' instances as Part 10 objects, one at a time: WADO-RS fetches each only
 * when the caller asks for the next, so a caller that stops (the case's picture budget is
 * spent) fetches nothing more.
 */
export async function* fetchInstances(s: DicomwebSeries): AsyncGenerator<{ file: Buffer; index: number; count: number }> {
  const { imageId, ref, options: o } = s;
  const chosen = representativeFrames(s.instances.length, o.maxInstances).map((k) => s.instances[k]!);
  // Each instance is at least one picture: refuse before fetching what the case could not send.
  if (o.pictures && chosen.length > o.pictures.left) {
    throw new MedmmvError("PAYLOAD_TOO_LARGE", `image "${imageId}" (DICOMweb): its ${chosen.length} instances would take the case past ${o.pictures.max} pictures; nothing was fetched`, { details: { imageId, pictures: chosen.length, left: o.pictures.left, max: o.pictures.max } });
  }
  for (const [index, inst] of chosen.entries()) {
    if (o.pictures && o.pictures.left < 1) {
      throw new MedmmvError("PAYLOAD_TOO_LARGE", `image "${imageId}" (DICOMweb): the case's ${o.pictures.max} pictures are spent after ${index} of the series' ${chosen.length} instances; the rest were not fetched`, { details: { imageId, fetched: index, instances: chosen.length, max: o.pictures.max } });
    }
    const { body, contentType } = await get(`${s.url}/instances/${inst.uid}`, 'multipart/related; type="application/dicom"; transfer-syntax=*', ref, o, imageId);
    const parts = splitMultipartRelated(body, contentType);
    if (parts.length !== 1) throw refuse("UNPROCESSABLE", imageId, `the WADO-RS answer for an instance holds ${parts.length} parts, not one DICOM object`);
    yield { file: parts[0]!, index, count: chosen.length };
  }
}
