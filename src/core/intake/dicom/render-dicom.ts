import { createHash } from "node:crypto";
import { MedmmvError } from "../../contracts/errors.js";
import { loadSharp } from "../image-decoder.js";
import type { DicomProvenance, LoadedImage } from "../../contracts/clinical-case.js";
import { deidentifiedContext } from "./deidentified-context.js";
import { DicomWorkerError, openDicom } from "./dicom-worker.js";
import { CT_WINDOWS, defaultWindow, objectWindow, representativeFrames, type DicomWindow } from "./windows.js";

/** Part 10 files start with a 128-byte preamble, then "DICM". */
export function isDicomPart10(buf: Buffer): boolean {
  return buf.length >= 132 && buf.toString("latin1", 128, 132) === "DICM";
}

/** The transfer syntaxes dcmjs-imaging decodes (its WASM codecs for the compressed ones). */
const TRANSFER_SYNTAXES: Record<string, string> = {
  "1.2.840.10008.1.2": "Implicit VR Little Endian",
  "1.2.840.10008.1.2.1": "Explicit VR Little Endian",
  "1.2.840.10008.1.2.1.99": "Deflated Explicit VR Little Endian",
  "1.2.840.10008.1.2.2": "Explicit VR Big Endian",
  "1.2.840.10008.1.2.5": "RLE Lossless",
  "1.2.840.10008.1.2.4.50": "JPEG Baseline (Process 1)",
  "1.2.840.10008.1.2.4.51": "JPEG Extended (Processes 2 & 4)",
  "1.2.840.10008.1.2.4.57": "JPEG Lossless (Process 14)",
  "1.2.840.10008.1.2.4.70": "JPEG Lossless (Process 14, SV1)",
  "1.2.840.10008.1.2.4.80": "JPEG-LS Lossless",
  "1.2.840.10008.1.2.4.81": "JPEG-LS Near-Lossless",
  "1.2.840.10008.1.2.4.90": "JPEG 2000 Lossless",
  "1.2.840.10008.1.2.4.91": "JPEG 2000",
  "1.2.840.10008.1.2.4.201": "HTJ2K Lossless",
  "1.2.840.10008.1.2.4.202": "HTJ2K Lossless RPCL",
  "1.2.840.10008.1.2.4.203": "HTJ2K",
};

const UNCOMPRESSED = new Set(["1.2.840.10008.1.2", "1.2.840.10008.1.2.1", "1.2.840.10008.1.2.1.99", "1.2.840.10008.1.2.2"]);

/**
 * Bytes in the file after the first PixelData (7FE0,0010) element header. dcmjs pads a value
 * that the file cuts short, so the parsed length alone cannot show truncation; the file's own
 * length can (an earlier value holding the same four bytes only makes this check more lenient).
 */
function bytesAfterPixelDataTag(buf: Buffer, tsUid: string): number {
  const bigEndian = tsUid === "1.2.840.10008.1.2.2";
  const tag = Buffer.from(bigEndian ? [0x7f, 0xe0, 0x00, 0x10] : [0xe0, 0x7f, 0x10, 0x00]);
  const at = buf.indexOf(tag, 132);
  if (at === -1) return buf.length; // deflated: the inflated dataset was checked by the parser
  const headerBytes = tsUid === "1.2.840.10008.1.2" ? 8 : 12; // implicit VR: tag + length; explicit OB/OW: tag + VR + reserved + length
  return Math.max(0, buf.length - at - headerBytes);
}

/** Most frames of one object anyone could mean to send (a long cine loop is a few thousand). */
export const MAX_DICOM_FRAMES_DECLARED = 10_000;

export interface DicomLimits {
  maxPixels: number;
  /** Frames rendered per object (representative frames beyond it). */
  maxFrames: number;
  /** Bytes the rendered RGBA pictures of one object may take together. */
  maxDecodedBytes: number;
  /** Extra CT windows the case's question needs (ctWindowsAskedFor), each another rendering. */
  extraCtWindows?: ReadonlyArray<keyof typeof CT_WINDOWS>;
}

function refuse(code: "INVALID_INPUT" | "PAYLOAD_TOO_LARGE" | "UNSUPPORTED_MEDIA" | "UNPROCESSABLE", imageId: string, why: string, details?: Record<string, unknown>): MedmmvError {
  return new MedmmvError(code, `image "${imageId}" (DICOM): ${why}`, { details: { imageId, ...details } });
}

function text(v: unknown): string | undefined {
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === "string" && first.length ? first : undefined;
}

function int(v: unknown): number | undefined {
  const first = Array.isArray(v) ? v[0] : v;
  const n = typeof first === "string" ? Number(first) : first;
  return typeof n === "number" && Number.isInteger(n) ? n : undefined;
}

/**
 * A DICOM Part 10 object as pictures for the model: representative frames, each windowed by
 * the rule in docs/imaging.md and encoded as PNG, with its provenance (UIDs, frame, window)
 * beside it and only de-identified context in its caption. The header is checked against
 * the limits before any pixel is decoded.
 */
export async function renderDicom(imageId: string, buf: Buffer, caption: string | undefined, limits: DicomLimits): Promise<LoadedImage[]> {
  // Parsing and decoding run in a worker thread (render-worker.mjs): a large compressed frame
  // takes hundreds of milliseconds of WebAssembly, which must not stall the event loop.
  let dicom: Awaited<ReturnType<typeof openDicom>>;
  try {
    dicom = await openDicom(buf);
  } catch (e) {
    throw refuse("INVALID_INPUT", imageId, `the file cannot be parsed (${reason(e)}); it is truncated or not DICOM Part 10`);
  }
  try {
    return await renderParsed(imageId, buf, caption, limits, dicom);
  } finally {
    dicom.close();
  }
}

async function renderParsed(imageId: string, buf: Buffer, caption: string | undefined, limits: DicomLimits, dicom: Awaited<ReturnType<typeof openDicom>>): Promise<LoadedImage[]> {
  const { elements, transferSyntaxUid: tsUid } = dicom.header;
  if (!TRANSFER_SYNTAXES[tsUid]) {
    throw refuse("UNSUPPORTED_MEDIA", imageId, `transfer syntax ${tsUid} is not supported; send it uncompressed or as RLE, JPEG, JPEG-LS or JPEG 2000`, { transferSyntaxUid: tsUid });
  }
  if (!dicom.header.hasPixelData) throw refuse("INVALID_INPUT", imageId, "the object has no pixel data (a report or structured document, not an image)");
  if (text(elements.BurnedInAnnotation)?.toUpperCase() === "YES") {
    throw refuse("UNPROCESSABLE", imageId, "BurnedInAnnotation is YES: the pixels may show the patient's name or ids, which must not reach a model; send a cleaned copy", { burnedInAnnotation: "YES" });
  }
  const rows = int(elements.Rows) ?? 0;
  const columns = int(elements.Columns) ?? 0;
  const frames = int(elements.NumberOfFrames) ?? 1;
  if (rows <= 0 || columns <= 0) throw refuse("INVALID_INPUT", imageId, `Rows ${rows} × Columns ${columns} is not an image size`);
  if (frames < 1 || frames > MAX_DICOM_FRAMES_DECLARED) {
    throw refuse(frames < 1 ? "INVALID_INPUT" : "PAYLOAD_TOO_LARGE", imageId, `NumberOfFrames ${frames} is outside 1–${MAX_DICOM_FRAMES_DECLARED}`, { frames });
  }
  if (rows * columns > limits.maxPixels) {
    throw refuse("PAYLOAD_TOO_LARGE", imageId, `a frame is ${columns}×${rows} (${rows * columns} pixels); the limit is ${limits.maxPixels} pixels`, { width: columns, height: rows, maxPixels: limits.maxPixels });
  }

  const context = deidentifiedContext(elements);
  const own = objectWindow(elements);
  const monochrome = /^MONOCHROME[12]$/.test(text(elements.PhotometricInterpretation) ?? "");
  const chosen = representativeFrames(frames, limits.maxFrames);
  const first: DicomWindow | null = monochrome ? (own ?? defaultWindow(text(elements.Modality))) : null;
  const extra = monochrome && text(elements.Modality) === "CT" ? (limits.extraCtWindows ?? []).map((name): DicomWindow => ({ ...CT_WINDOWS[name], source: `CT ${name} (asked for by the case)` })) : [];
  const windows: Array<DicomWindow | null> = [first, ...extra];
  const renderings = chosen.flatMap((frame) => windows.map((window, w) => ({ frame, window, suffix: w === 0 ? "" : `-${extraNames(limits)[w - 1]}` })));
  const decodedBytes = renderings.length * rows * columns * 4;
  if (decodedBytes > limits.maxDecodedBytes) {
    throw refuse("PAYLOAD_TOO_LARGE", imageId, `${renderings.length} renderings of ${columns}×${rows} decode to ${decodedBytes} bytes; the limit is ${limits.maxDecodedBytes} bytes of pixels per image — send fewer frames or a smaller object`, { decodedBytes, maxDecodedBytes: limits.maxDecodedBytes });
  }
  // Uncompressed pixel data must hold every frame the header claims; a renderer would pad it.
  if (UNCOMPRESSED.has(tsUid)) {
    const need = rows * columns * frames * (int(elements.SamplesPerPixel) ?? 1) * Math.ceil((int(elements.BitsAllocated) ?? 16) / 8);
    const have = Math.min(dicom.header.pixelBytes, bytesAfterPixelDataTag(buf, tsUid));
    if (have < need) throw refuse("INVALID_INPUT", imageId, `the pixel data holds ${have} bytes where Rows × Columns × frames need ${need}; the file is truncated`, { pixelBytes: have, expected: need });
  }

  let pictures: Awaited<ReturnType<typeof dicom.render>>;
  try {
    pictures = await dicom.render(renderings.map(({ frame, window }) => ({ frame, window: window ? { center: window.center, width: window.width } : null })));
  } catch (e) {
    const frame = e instanceof DicomWorkerError && e.frame !== undefined ? e.frame + 1 : undefined;
    throw refuse("INVALID_INPUT", imageId, `${frame ? `frame ${frame}` : "a frame"} cannot be decoded (${reason(e)}); the pixel data is truncated or corrupt`, frame ? { frame } : undefined);
  }
  const out: LoadedImage[] = [];
  for (const [k, { frame, window, suffix }] of renderings.entries()) {
    const rendered = pictures[k]!;
    const used = window ?? (monochrome && rendered.window ? { ...rendered.window, source: "frame value range" } : undefined);
    const png = await (await loadSharp())(Buffer.from(rendered.pixels), { raw: { width: rendered.width, height: rendered.height, channels: 4 } })
      .removeAlpha()
      .png()
      .toBuffer();
    const provenance: DicomProvenance = {
      sopInstanceUid: text(elements.SOPInstanceUID) ?? "(none)",
      ...(text(elements.SeriesInstanceUID) ? { seriesInstanceUid: text(elements.SeriesInstanceUID)! } : {}),
      ...(text(elements.StudyInstanceUID) ? { studyInstanceUid: text(elements.StudyInstanceUID)! } : {}),
      ...(text(elements.Modality) ? { modality: text(elements.Modality)! } : {}),
      transferSyntaxUid: tsUid,
      frame: frame + 1,
      frames,
      ...(used ? { window: used } : {}),
    };
    const describe = [caption, `DICOM${context ? ` ${context}` : ""}`, frames > 1 ? `frame ${frame + 1} of ${frames}` : "", used ? `window C${used.center}/W${used.width} (${used.source})` : ""];
    out.push({
      id: `${chosen.length > 1 ? `${imageId}-frame${frame + 1}` : imageId}${suffix}`,
      mimeType: "image/png",
      data: png.toString("base64"),
      sha256: createHash("sha256").update(png).digest("hex"),
      width: rendered.width,
      height: rendered.height,
      caption: describe.filter(Boolean).join("; ").slice(0, 2000),
      dicom: provenance,
    });
  }
  return out;
}

function extraNames(limits: DicomLimits): string[] {
  return (limits.extraCtWindows ?? []).map((n) => n.replace(/\s+/g, "-"));
}

/** A library's message, one line, bounded; it names the problem, never a header value. */
function reason(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 200);
}
