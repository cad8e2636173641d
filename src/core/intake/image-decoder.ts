import type { Metadata, Sharp, SharpOptions } from "sharp";
import { MedmmvError } from "../contracts/errors.js";
import type { LoadedImage } from "../contracts/clinical-case.js";

type ImageMime = LoadedImage["mimeType"];

let sharpLoaded: Promise<(input: Buffer, options?: SharpOptions) => Sharp> | undefined;

/**
 * sharp (libvips, a native addon) is loaded by the first image that needs it, so a case
 * without images, `--help` and the commands that never decode do not pay for it.
 */
export function loadSharp(): Promise<(input: Buffer, options?: SharpOptions) => Sharp> {
  return (sharpLoaded ??= import("sharp").then(({ default: sharp }) => {
    // libvips' operation cache would keep decoded patient pictures in memory after their case.
    sharp.cache(false);
    return sharp;
  }));
}

/**
 * Decoded pixels one image may take by default (all frames, all channels): a 4000×3000 RGBA
 * photo is 48 MB, a 6000×6000 RGBA PNG that deflates to 140 KB is 144 MB and refused.
 */
export const DEFAULT_MAX_DECODED_BYTES = 100_000_000;

export interface DecodeLimits {
  maxPixels: number;
  maxDecodedBytes?: number;
}

/** libvips' name for each format we accept, to check the decoder agrees with the magic bytes. */
const VIPS_FORMAT: Record<ImageMime, string> = { "image/jpeg": "jpeg", "image/png": "png", "image/gif": "gif", "image/webp": "webp" };

/** Bytes per sample of libvips' band formats. */
const SAMPLE_BYTES: Record<string, number> = { uchar: 1, char: 1, ushort: 2, short: 2, uint: 4, int: 4, float: 4, complex: 8, double: 8, dpcomplex: 16 };

/** A validation decode is resampled to at most this side: it reads every byte, keeps little. */
const VALIDATION_SIDE = 256;

/**
 * sharp options that bound what the decoder may allocate: libvips refuses an image whose
 * frames together claim more than `limitInputPixels` before it allocates them (it sizes a
 * GIF by its largest frame, not its screen), and fails on decoder errors (truncation, a
 * second frame header) rather than rendering what it could.
 */
function decoderOptions(limits: DecodeLimits, allPages: boolean): SharpOptions {
  return { limitInputPixels: limits.maxPixels, failOn: "error", sequentialRead: true, ...(allPages ? { pages: -1 } : {}) };
}

/**
 * Probe every frame header with the decoder, check the limits, then decode every frame once
 * (resampled as it streams, so memory stays small) so that corrupt data is refused here and
 * not by the model provider. sharp runs all of this on libuv's thread pool: the event loop
 * is never blocked by a large image.
 */
export async function decodeImage(imageId: string, buf: Buffer, mime: ImageMime, limits: DecodeLimits): Promise<{ width: number; height: number }> {
  const maxDecodedBytes = limits.maxDecodedBytes ?? DEFAULT_MAX_DECODED_BYTES;
  const sharp = await loadSharp();
  let meta: Metadata;
  try {
    // Headers only (every frame's, for GIF), nothing allocated for pixels: unlimited here so
    // that a refusal can say how big the claim is; the decode below enforces the limit.
    meta = await sharp(buf, { ...decoderOptions(limits, true), limitInputPixels: false }).metadata();
  } catch (e) {
    throw decoderRefusal(imageId, buf, mime, e, limits.maxPixels);
  }
  if (meta.format !== VIPS_FORMAT[mime]) {
    throw new MedmmvError("INVALID_INPUT", `image "${imageId}" starts like ${mime} but the decoder reads it as ${meta.format ?? "nothing"}; re-export the image`);
  }
  const pages = Math.max(1, meta.pages ?? 1);
  const width = meta.width ?? 0;
  const frameHeight = meta.pageHeight ?? meta.height ?? 0;
  if (width <= 0 || frameHeight <= 0) {
    throw new MedmmvError("INVALID_INPUT", `image "${imageId}": the ${mime} header gives no size; re-export the image`);
  }
  const pixels = width * frameHeight * pages;
  if (pixels > limits.maxPixels) throw tooManyPixels(imageId, { width, height: frameHeight, pages, pixels }, limits.maxPixels);
  const decodedBytes = pixels * (meta.channels ?? 4) * (SAMPLE_BYTES[meta.depth ?? "uchar"] ?? 8);
  if (decodedBytes > maxDecodedBytes) {
    throw new MedmmvError(
      "PAYLOAD_TOO_LARGE",
      `image "${imageId}" (${width}×${frameHeight}${pages > 1 ? ` × ${pages} frames` : ""}) decodes to ${decodedBytes} bytes; ` +
        `the limit is ${maxDecodedBytes} bytes of pixels per image — downscale it or send fewer frames`,
      { details: { imageId, width, height: frameHeight, pages, decodedBytes, maxDecodedBytes } },
    );
  }
  try {
    await sharp(buf, decoderOptions(limits, true))
      .resize(VALIDATION_SIDE, VALIDATION_SIDE, { fit: "inside", withoutEnlargement: true })
      .raw()
      .toBuffer();
  } catch (e) {
    throw decoderRefusal(imageId, buf, mime, e, limits.maxPixels);
  }
  return { width, height: frameHeight };
}

function tooManyPixels(imageId: string, d: { width: number; height: number; pages: number; pixels: number }, maxPixels: number): MedmmvError {
  const frames = d.pages > 1 ? ` × ${d.pages} frames` : "";
  return new MedmmvError(
    "PAYLOAD_TOO_LARGE",
    `image "${imageId}" is ${d.width}×${d.height}${frames} (${d.pixels} pixels); the limit is ${maxPixels} pixels — downscale it`,
    { details: { imageId, width: d.width, height: d.height, pages: d.pages, maxPixels } },
  );
}

/** libvips' own words say what is wrong with the file; they never contain case content. */
function decoderRefusal(imageId: string, buf: Buffer, mime: ImageMime, e: unknown, maxPixels: number): MedmmvError {
  const raw = e instanceof Error ? e.message : String(e);
  // libvips sizes frames before allocating; libjpeg and libspng refuse sides past their own maxima.
  if (/exceeds pixel limit|maximum supported image dimension|image too large|bad image dimensions/i.test(raw) || pngClaimsTooMuch(buf, mime, maxPixels)) {
    return new MedmmvError(
      "PAYLOAD_TOO_LARGE",
      `image "${imageId}": a frame of this ${mime} claims more than the limit of ${maxPixels} pixels (a decompression bomb or an oversized image) — downscale it`,
      { details: { imageId, maxPixels }, cause: e },
    );
  }
  const reason = [...new Set(raw.split("\n").map((l) => l.trim()).filter(Boolean))].join("; ").slice(0, 300);
  return new MedmmvError("INVALID_INPUT", `image "${imageId}": the ${mime} decoder refused it (${reason}); re-export the image`, { cause: e });
}

/**
 * libspng refuses a PNG whose IHDR exceeds its own maxima without saying why. The decision
 * is the decoder's; this only classifies it, from the one size field PNG fixes in place
 * (IHDR is the first chunk: width at byte 16, height at 20), as too large rather than corrupt.
 */
function pngClaimsTooMuch(buf: Buffer, mime: ImageMime, maxPixels: number): boolean {
  return mime === "image/png" && buf.length >= 24 && buf.readUInt32BE(16) * buf.readUInt32BE(20) > maxPixels;
}

/**
 * What the vision model is sent: a re-encoding whose long side is at most `longSide`. It is
 * made even when no resize is needed, so a model only ever receives pixels this decoder
 * checked (not trailing data after a JPEG's end, a second embedded picture, or EXIF and
 * comment fields that may name the patient), and an animated GIF or WebP as its first frame.
 * `longSide` 0 sends the original bytes.
 */
export async function modelRendition(img: LoadedImage, longSide: number, maxPixels: number): Promise<LoadedImage> {
  if (longSide <= 0) return img;
  const sharp = await loadSharp();
  const pipeline = sharp(Buffer.from(img.data, "base64"), decoderOptions({ maxPixels }, false))
    .rotate() // honour EXIF orientation before the EXIF is dropped
    .resize(longSide, longSide, { fit: "inside", withoutEnlargement: true });
  // Photographic JPEGs stay JPEG; everything else becomes lossless PNG.
  const encoded = img.mimeType === "image/jpeg" ? pipeline.jpeg({ quality: 90 }) : pipeline.png();
  const { data, info } = await encoded.toBuffer({ resolveWithObject: true });
  return {
    ...img,
    mimeType: img.mimeType === "image/jpeg" ? "image/jpeg" : "image/png",
    data: data.toString("base64"),
    width: info.width,
    height: info.height,
  };
}
