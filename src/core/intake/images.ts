import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../contracts/errors.js";
import type { ImageInput, LoadedImage } from "../contracts/clinical-case.js";

export type ImageMime = LoadedImage["mimeType"];

export interface PrepareImageOptions {
  maxBytes: number;
  maxPixels: number;
  /** Folder that relative `path`s are resolved against (the case file's folder for the CLI). */
  baseDir?: string;
  /** `path` is only for trusted local callers (CLI, eval); the HTTP API never sets this. */
  allowPath: boolean;
}

const ACCEPTED = "JPEG, PNG, GIF or WebP";

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

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Width and height from the container header alone. Nothing is decoded, so a file that
 * claims a huge canvas (a decompression bomb) can be refused before anyone inflates it.
 * Returns null when the header is truncated or malformed.
 */
export function readImageDimensions(buf: Buffer, mime: ImageMime): { width: number; height: number } | null {
  switch (mime) {
    case "image/png":
      return pngDimensions(buf);
    case "image/gif":
      return buf.length >= 10 ? positive(buf.readUInt16LE(6), buf.readUInt16LE(8)) : null;
    case "image/webp":
      return webpDimensions(buf);
    case "image/jpeg":
      return jpegDimensions(buf);
  }
}

function positive(width: number, height: number): { width: number; height: number } | null {
  return width > 0 && height > 0 ? { width, height } : null;
}

function pngDimensions(buf: Buffer): { width: number; height: number } | null {
  // The PNG spec requires IHDR to be the first chunk, with a fixed length of 13.
  if (buf.length < 24 || buf.readUInt32BE(8) !== 13 || buf.toString("latin1", 12, 16) !== "IHDR") return null;
  return positive(buf.readUInt32BE(16), buf.readUInt32BE(20));
}

function webpDimensions(buf: Buffer): { width: number; height: number } | null {
  if (buf.length < 16) return null;
  const chunk = buf.toString("latin1", 12, 16);
  const data = 20; // after RIFF header (12) + chunk fourcc (4) + chunk size (4)
  if (chunk === "VP8 ") {
    // Lossy: 3-byte frame tag, start code 9D 01 2A, then 14-bit width and height.
    if (buf.length < data + 10) return null;
    if (buf[data + 3] !== 0x9d || buf[data + 4] !== 0x01 || buf[data + 5] !== 0x2a) return null;
    return positive(buf.readUInt16LE(data + 6) & 0x3fff, buf.readUInt16LE(data + 8) & 0x3fff);
  }
  if (chunk === "VP8L") {
    // Lossless: signature 0x2F, then (width-1) and (height-1) packed as two 14-bit fields.
    if (buf.length < data + 5 || buf[data] !== 0x2f) return null;
    const bits = buf.readUInt32LE(data + 1);
    return positive((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (chunk === "VP8X") {
    // Extended: flags (1) + reserved (3), then canvas (width-1) and (height-1) as 24-bit LE.
    if (buf.length < data + 10) return null;
    return positive(buf.readUIntLE(data + 4, 3) + 1, buf.readUIntLE(data + 7, 3) + 1);
  }
  return null;
}

/** Start-of-frame markers that carry the frame size (C4 DHT, C8 JPG and CC DAC are not frames). */
const JPEG_SOF = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

function jpegDimensions(buf: Buffer): { width: number; height: number } | null {
  let pos = 2; // after SOI
  while (pos < buf.length) {
    if (buf[pos] !== 0xff) return null; // segments must be back to back; anything else is corrupt
    // Any number of 0xFF fill bytes may precede a marker.
    while (pos < buf.length && buf[pos] === 0xff) pos++;
    if (pos >= buf.length) return null;
    const marker = buf[pos]!;
    pos++;
    // Standalone markers carry no length field.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) continue;
    // End of image or start of scan before any frame header: no size to read.
    if (marker === 0xd9 || marker === 0xda) return null;
    if (pos + 2 > buf.length) return null;
    const length = buf.readUInt16BE(pos);
    if (length < 2 || pos + length > buf.length) return null;
    if (JPEG_SOF.has(marker)) {
      if (length < 7) return null;
      // Segment: length(2) precision(1) height(2) width(2). A height of 0 defers to a DNL
      // marker after the scan; we refuse that rather than decode to find out.
      return positive(buf.readUInt16BE(pos + 5), buf.readUInt16BE(pos + 3));
    }
    pos += length;
  }
  return null;
}

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
 * Load one image from base64 or (trusted callers only) a file path, check its real format
 * and size, and refuse oversized canvases from the header before anything decodes it.
 */
export async function prepareImage(input: ImageInput, opts: PrepareImageOptions): Promise<LoadedImage> {
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

  const mimeType = sniffImageMime(buf);
  if (mimeType === null) {
    throw new MedmmvError(
      "UNSUPPORTED_MEDIA",
      `image "${input.id}" is not a supported format; accepted formats are ${ACCEPTED} (detected from the bytes, not the name or declared type)`,
      { details: { imageId: input.id, accepted: ["image/jpeg", "image/png", "image/gif", "image/webp"] } },
    );
  }
  const dims = readImageDimensions(buf, mimeType);
  if (dims === null) {
    throw new MedmmvError(
      "INVALID_INPUT",
      `image "${input.id}": the ${mimeType} header is truncated or corrupt, so its size cannot be checked; re-export the image`,
    );
  }
  const pixels = dims.width * dims.height;
  if (pixels > opts.maxPixels) {
    throw new MedmmvError(
      "PAYLOAD_TOO_LARGE",
      `image "${input.id}" is ${dims.width}×${dims.height} (${pixels} pixels); the limit is ${opts.maxPixels} pixels — downscale it`,
      { details: { imageId: input.id, width: dims.width, height: dims.height, maxPixels: opts.maxPixels } },
    );
  }

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
