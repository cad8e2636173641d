import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../contracts/errors.js";
import type { ImageInput, LoadedImage } from "../contracts/clinical-case.js";
import { DEFAULT_MAX_DECODED_BYTES, decodeImage } from "./image-decoder.js";
import { isDicomPart10, renderDicom, reservePictures, type PictureBudget } from "./dicom/render-dicom.js";
import { part10FromBareDataset } from "./dicom/dataset-walk.js";
import { fetchInstances, isWholeSlideSeries, locateSeries, type DicomwebOptions } from "./dicom/dicomweb.js";
import { readWholeSlide } from "./dicom/whole-slide.js";

export type ImageMime = LoadedImage["mimeType"];

export interface PrepareImageOptions {
  maxBytes: number;
  maxPixels: number;
  /** Most bytes the decoded pixels of one image may take (all frames); default DEFAULT_MAX_DECODED_BYTES. */
  maxDecodedBytes?: number;
  /** Frames rendered per multi-frame DICOM object; default DEFAULT_DICOM_FRAMES. */
  maxDicomFrames?: number;
  /** Extra CT windows the case's question asks for (set by prepareCase from its text). */
  extraCtWindows?: ReadonlyArray<"lung" | "bone">;
  /** DICOMweb servers and limits; without it no `dicomweb` image can be fetched. */
  dicomweb?: Omit<DicomwebOptions, "maxBytes">;
  /** Whose case this is (the API key's owner): DICOM decoding serves tenants in turn. */
  tenant?: string;
  /** The long side a model reads (MEDMMV_IMAGE_MODEL_LONG_SIDE): a whole slide's overview level fits it. */
  modelLongSide?: number;
  /** The case asks about cells (set by prepareCase from its text): a whole slide sends finer regions too. */
  cellRegions?: boolean;
  /** The case's pictures still free (set by prepareCase): every picture is reserved before it is decoded. */
  pictures?: PictureBudget;
  /** The case's abort (prepareCase aborts it when any image is refused): fetching and decoding stop at once. */
  signal?: AbortSignal;
  /** Folder that relative `path`s are resolved against (the case file's folder for the CLI). */
  baseDir?: string;
  /** `path` is only for trusted local callers (CLI, eval); the HTTP API never sets this. */
  allowPath: boolean;
}

const ACCEPTED = "JPEG, PNG, GIF, WebP or DICOM Part 10";

/** The real format, from magic bytes only: names and declared types are client claims. */
export function sniffImageMime(buf: Buffer): ImageMime | null {
  if (buf.length >= 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff) return "image/jpeg";
  if (buf.length >= 8 && buf.subarray(0, 8).equals(PNG_SIGNATURE)) return "image/png";
  if (buf.length >= 6) {
    const head = buf.toString("latin1", 0, 6);
    if (head === "GIF87a" || head === "GIF89a") return "image/gif";
  }
  if (buf.length >= 12 && buf.toString("latin1", 0, 4) === "RIFF" && buf.toString("latin1", 8, 12) === "WEBP") {
    return "image/webp";
  }
  return null;
}

/**
 * What an image's bytes are, the one detection every intake path uses (case JSON, multipart
 * upload, CLI, FHIR attachments): DICOM Part 10 by its preamble and "DICM"; JPEG, PNG, GIF or
 * WebP by their magic bytes; else DICOM written without the preamble (older writers; DCMTK and
 * GDCM read it) when the whole of it walks as DICOM, given as the Part 10 file it would be.
 * Null when it is none of these.
 */
export function recogniseImage(buf: Buffer): { mime: "application/dicom"; part10: Buffer } | { mime: ImageMime } | null {
  if (isDicomPart10(buf)) return { mime: "application/dicom", part10: buf };
  const mime = sniffImageMime(buf);
  if (mime) return { mime };
  const bare = part10FromBareDataset(buf);
  return bare ? { mime: "application/dicom", part10: bare } : null;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const DATA_URL_PREFIX = /^data:[^,;]*(?:;[^,;]*)*;base64,/i;
const STRICT_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decode a client's base64 strictly: Buffer.from would silently skip junk characters. */
export function decodeBase64(imageId: string, raw: string, maxBytes: number): Buffer {
  // MIME encoders wrap lines at 76 characters; line breaks are the only whitespace we forgive.
  const body = raw.replace(DATA_URL_PREFIX, "").replace(/\r?\n/g, "");
  if (body.length === 0) {
    throw new MedmmvError("INVALID_INPUT", `image "${imageId}": \`data\` is empty; send the image bytes as base64`);
  }
  // Refuse before allocating: base64 carries 3 bytes per 4 characters.
  const approxBytes = Math.floor((body.length * 3) / 4);
  if (approxBytes - 2 > maxBytes) {
    throw tooManyBytes(imageId, approxBytes, maxBytes);
  }
  if (body.length % 4 !== 0 || !STRICT_BASE64.test(body)) {
    throw new MedmmvError(
      "INVALID_INPUT",
      `image "${imageId}": \`data\` is not valid base64; send standard base64 (A–Z a–z 0–9 + /, '=' padding, ` +
        `optionally prefixed by "data:image/...;base64,")`,
    );
  }
  return Buffer.from(body, "base64");
}

function tooManyBytes(imageId: string, bytes: number, maxBytes: number): MedmmvError {
  return new MedmmvError(
    "PAYLOAD_TOO_LARGE",
    `image "${imageId}" is ${bytes} bytes; the limit is ${maxBytes} bytes per image — send a smaller or more compressed image`,
    { details: { imageId, bytes, maxBytes } },
  );
}

async function readImageFile(imageId: string, file: string, baseDir: string, maxBytes: number): Promise<Buffer> {
  const resolved = path.resolve(baseDir, file);
  const unreadable = (why: string, cause?: unknown) =>
    new MedmmvError(
      "INVALID_INPUT",
      `image "${imageId}": cannot read ${resolved} (${why}); check \`path\` — relative paths are resolved against ${baseDir}`,
      { cause },
    );
  let size: number;
  try {
    const st = await stat(resolved);
    if (!st.isFile()) throw unreadable("not a regular file");
    size = st.size;
  } catch (e) {
    if (e instanceof MedmmvError) throw e;
    throw unreadable(errnoCode(e), e);
  }
  if (size > maxBytes) throw tooManyBytes(imageId, size, maxBytes);
  let buf: Buffer;
  try {
    buf = await readFile(resolved);
  } catch (e) {
    throw unreadable(errnoCode(e), e);
  }
  // The file may have grown between stat and read.
  if (buf.length > maxBytes) throw tooManyBytes(imageId, buf.length, maxBytes);
  return buf;
}

function errnoCode(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "read failed";
}

/**
 * Load one image from base64 or (trusted callers only) a file path, check its real format,
 * then let the decoder probe every frame header against the pixel limits and decode it in
 * full (libvips, on libuv's threads), so a bomb or a corrupt file is refused at intake.
 */
export async function prepareImage(input: ImageInput, opts: PrepareImageOptions): Promise<LoadedImage> {
  const buf = await imageBytes(input, opts);
  return decodedImage(input, buf, opts);
}

/**
 * One input as the pictures it stands for: an image is itself; a DICOM object is its
 * rendered representative frames (src/core/intake/dicom/render-dicom.ts).
 */
export async function prepareImages(input: ImageInput, opts: PrepareImageOptions): Promise<LoadedImage[]> {
  const dicomLimits = {
    maxPixels: opts.maxPixels,
    maxFrames: opts.maxDicomFrames ?? DEFAULT_DICOM_FRAMES,
    maxDecodedBytes: opts.maxDecodedBytes ?? DEFAULT_MAX_DECODED_BYTES,
    ...(opts.extraCtWindows ? { extraCtWindows: opts.extraCtWindows } : {}),
    modelLongSide: opts.modelLongSide ?? DEFAULT_MODEL_LONG_SIDE,
    ...(opts.cellRegions ? { cellRegions: true } : {}),
    ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
    ...(opts.pictures ? { pictures: opts.pictures } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  };
  opts.signal?.throwIfAborted();
  if (input.dicomweb !== undefined && input.data === undefined && input.path === undefined) {
    const series = await locateSeries(input.id, input.dicomweb, { servers: [], maxInstances: DEFAULT_DICOM_FRAMES, timeoutMs: 20_000, attempts: 3, ...opts.dicomweb, maxBytes: opts.maxBytes, ...(opts.pictures ? { pictures: opts.pictures } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
    // A whole slide is a pyramid of tiled levels: read as one, never instance by instance.
    if (isWholeSlideSeries(series)) return readWholeSlide(series, input.caption, { longSide: opts.modelLongSide ?? DEFAULT_MODEL_LONG_SIDE, maxPixels: opts.maxPixels, maxDecodedBytes: dicomLimits.maxDecodedBytes, regions: opts.cellRegions ?? false, ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}), ...(opts.pictures ? { pictures: opts.pictures } : {}), ...(opts.signal ? { signal: opts.signal } : {}) });
    const instances = fetchInstances(series);
    const rendered = [];
    // One instance fetched, then rendered (reserving its pictures), then the next: a series
    // past the case's budget stops at the first instance that would not fit.
    for await (const { file, index, count } of instances) rendered.push(...(await renderDicom(count > 1 ? `${input.id}-${index + 1}` : input.id, file, input.caption, dicomLimits)));
    // A classic PET series' slices are brought to one activity scale with the rest of the case's (case-intake.ts).
    return rendered;
  }
  const buf = await imageBytes(input, opts);
  const kind = recogniseImage(buf);
  if (kind && "part10" in kind) return renderDicom(input.id, kind.part10, input.caption, dicomLimits);
  opts.signal?.throwIfAborted();
  reservePictures(opts.pictures, 1, input.id);
  return [await decodedImage(input, buf, opts)];
}

/** MEDMMV_IMAGE_MODEL_LONG_SIDE's default, for callers that do not pass the setting. */
const DEFAULT_MODEL_LONG_SIDE = 1536;

/** Frames of one multi-frame DICOM object sent by default. */
export const DEFAULT_DICOM_FRAMES = 4;

async function imageBytes(input: ImageInput, opts: PrepareImageOptions): Promise<Buffer> {
  let buf: Buffer;
  if (input.data !== undefined) {
    buf = decodeBase64(input.id, input.data, opts.maxBytes);
  } else if (input.path !== undefined) {
    if (!opts.allowPath) {
      throw new MedmmvError(
        "INVALID_INPUT",
        `image "${input.id}": \`path\` is not accepted here; send the image bytes as base64 in \`data\``,
      );
    }
    buf = await readImageFile(input.id, input.path, opts.baseDir ?? process.cwd(), opts.maxBytes);
  } else {
    throw new MedmmvError("INVALID_INPUT", `image "${input.id}" has neither \`data\` (base64) nor \`path\``);
  }

  if (buf.length === 0) {
    throw new MedmmvError("INVALID_INPUT", `image "${input.id}" is empty (0 bytes)`);
  }
  if (buf.length > opts.maxBytes) throw tooManyBytes(input.id, buf.length, opts.maxBytes);
  return buf;
}

async function decodedImage(input: ImageInput, buf: Buffer, opts: PrepareImageOptions): Promise<LoadedImage> {
  const mimeType = sniffImageMime(buf);
  if (mimeType === null) {
    throw new MedmmvError(
      "UNSUPPORTED_MEDIA",
      `image "${input.id}" is not a supported format; accepted formats are ${ACCEPTED} (detected from the bytes, not the name or declared type)`,
      { details: { imageId: input.id, accepted: ["image/jpeg", "image/png", "image/gif", "image/webp", "application/dicom"] } },
    );
  }
  const dims = await decodeImage(input.id, buf, mimeType, opts);

  const loaded: LoadedImage = {
    id: input.id,
    mimeType,
    data: buf.toString("base64"),
    sha256: createHash("sha256").update(buf).digest("hex"),
    width: dims.width,
    height: dims.height,
  };
  if (input.caption !== undefined) loaded.caption = input.caption;
  return loaded;
}
