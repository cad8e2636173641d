import { MedmmvError } from "../../contracts/errors.js";
import type { DicomwebRef } from "../../contracts/clinical-case.js";
import { readCappedBody } from "../../net/read-capped-body.js";
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
  /** The case's pictures still free: a series needing more instances is refused before any is fetched. */
  pictures?: { readonly left: number; readonly max: number };
}

export function isAllowedDicomwebServer(server: string, allowList: readonly string[]): boolean {
  return allowList.includes(server.replace(/\/+$/, ""));
}

function refuse(code: "INVALID_INPUT" | "PAYLOAD_TOO_LARGE" | "UNPROCESSABLE" | "NOT_FOUND", imageId: string, why: string): MedmmvError {
  return new MedmmvError(code, `image "${imageId}" (DICOMweb): ${why}`, { details: { imageId } });
}

/**
 * GET with the caller's token, a timeout per attempt, a size cap, no redirects (an allowed
 * server cannot send us elsewhere) and a short backoff between attempts on 429/5xx/network
 * errors. Server answers are summarised by status only; their text is never echoed.
 */
async function get(url: string, accept: string, ref: DicomwebRef, o: DicomwebOptions, imageId: string): Promise<{ body: Buffer; contentType: string }> {
  let lastWhy = "";
  for (let attempt = 1; attempt <= o.attempts; attempt++) {
    let res: Response;
    try {
      res = await fetch(url, {
        headers: { accept, ...(ref.accessToken ? { authorization: `Bearer ${ref.accessToken}` } : {}) },
        redirect: "error",
        signal: AbortSignal.timeout(o.timeoutMs),
      });
    } catch (e) {
      lastWhy = (e as Error).name === "TimeoutError" ? `no answer within ${o.timeoutMs} ms` : "the server could not be reached";
      await backoff(attempt, o.attempts);
      continue;
    }
    if (res.status === 429 || res.status >= 500) {
      await res.body?.cancel().catch(() => undefined);
      lastWhy = `the server answered ${res.status}`;
      await backoff(attempt, o.attempts);
      continue;
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      if (res.status === 404) throw refuse("NOT_FOUND", imageId, "the server has no such study, series or instance");
      throw refuse("UNPROCESSABLE", imageId, `the server answered ${res.status}${res.status === 401 || res.status === 403 ? " (check the access token)" : ""}`);
    }
    const body = await readCappedBody(res, o.maxBytes);
    if (body === null) throw refuse("PAYLOAD_TOO_LARGE", imageId, `an answer is larger than ${o.maxBytes} bytes`);
    return { body, contentType: res.headers.get("content-type") ?? "" };
  }
  throw new MedmmvError("UNPROCESSABLE", `image "${imageId}" (DICOMweb): ${lastWhy} after ${o.attempts} attempts`, { details: { imageId }, retryable: true });
}

async function backoff(attempt: number, attempts: number): Promise<void> {
  if (attempt < attempts) await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1)));
}

type QidoItem = Record<string, { vr?: string; Value?: unknown[] } | undefined>;

function tagValue(item: QidoItem, tag: string): string | number | undefined {
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
  const uid = sorted[0] ? tagValue(sorted[0], "0020000E") : undefined;
  return typeof uid === "string" ? uid : undefined;
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

/**
 * A DICOMweb reference as Part 10 objects: QIDO-RS picks the series (when not named) and its
 * instances, WADO-RS fetches each. A server off the allow-list is refused before any request.
 */
export async function fetchDicomweb(imageId: string, ref: DicomwebRef, o: DicomwebOptions): Promise<Buffer[]> {
  if (!isAllowedDicomwebServer(ref.server, o.servers)) {
    throw new MedmmvError("INVALID_INPUT", `image "${imageId}" (DICOMweb): server ${new URL(ref.server).origin} is not in MEDMMV_DICOMWEB_SERVERS; it was not contacted`, { details: { imageId } });
  }
  const base = ref.server.replace(/\/+$/, "");
  const study = `${base}/studies/${ref.study}`;
  const series = ref.series ?? chooseSeries(await qido(`${study}/series`, ref, o, imageId));
  if (!series) throw refuse("NOT_FOUND", imageId, "the study has no series");
  const instances = (await qido(`${study}/series/${series}/instances`, ref, o, imageId))
    .map((i) => ({ uid: tagValue(i, "00080018"), number: Number(tagValue(i, "00200013") ?? 0) }))
    .filter((i): i is { uid: string; number: number } => typeof i.uid === "string" && /^[0-9.]{1,64}$/.test(i.uid))
    .sort((a, b) => a.number - b.number || a.uid.localeCompare(b.uid));
  if (instances.length === 0) throw refuse("NOT_FOUND", imageId, "the series has no instances");
  const chosen = representativeFrames(instances.length, o.maxInstances).map((k) => instances[k]!);
  // Each instance is at least one picture: refuse before fetching what the case could not send.
  if (o.pictures && chosen.length > o.pictures.left) {
    throw new MedmmvError("PAYLOAD_TOO_LARGE", `image "${imageId}" (DICOMweb): its ${chosen.length} instances would take the case past ${o.pictures.max} pictures; nothing was fetched`, { details: { imageId, pictures: chosen.length, left: o.pictures.left, max: o.pictures.max } });
  }
  const files: Buffer[] = [];
  for (const inst of chosen) {
    const { body, contentType } = await get(`${study}/series/${series}/instances/${inst.uid}`, 'multipart/related; type="application/dicom"; transfer-syntax=*', ref, o, imageId);
    const parts = splitMultipartRelated(body, contentType);
    if (parts.length !== 1) throw refuse("UNPROCESSABLE", imageId, `the WADO-RS answer for an instance holds ${parts.length} parts, not one DICOM object`);
    files.push(parts[0]!);
  }
  return files;
}
