import { promisify } from "node:util";
import { inflateRaw } from "node:zlib";
import { MedmmvError } from "../../contracts/errors.js";
import { loadSharp } from "../image-decoder.js";
import type { DicomProvenance, LoadedImage } from "../../contracts/clinical-case.js";
import { CONTEXT_ATTRIBUTES, deidentifiedContext } from "./deidentified-context.js";
import { DecodeWorkerFailure } from "./decode-pool.js";
import { dicomPicture } from "./dicom-picture.js";
import { reservePictures, type PictureBudget } from "./picture-budget.js";
import { WSI_SOP_CLASS } from "./dicomweb.js";
import { slideFromInstance } from "./whole-slide-instance.js";
import { declaredCodestreamSize } from "./codestream-size.js";
import { bigEndianToLittle, DatasetShapeError, DEFAULT_WALK_LIMITS, DEFLATED_LE, EXPLICIT_BE, EXPLICIT_LE, explicitVr, IMPLICIT_LE, implicitToExplicit, readFileMeta, walkPart10, withTransferSyntax, type DatasetShape } from "./dataset-walk.js";
import { DicomWorkerError, withParsedDicom, type ParsedDicom, type RenderedFrame } from "./dicom-worker.js";
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

const inflateRawAsync = promisify(inflateRaw);

/** Most frames of one object anyone could mean to send (a long cine loop is a few thousand). */
export const MAX_DICOM_FRAMES_DECLARED = 10_000;

export interface DicomLimits {
  maxPixels: number;
  /** The long side a model reads: a whole-slide instance's overview fits it (default 1536). */
  modelLongSide?: number;
  /** The case asks about cells: a whole-slide instance sends finer regions too. */
  cellRegions?: boolean;
  /** Frames rendered per object (representative frames beyond it). */
  maxFrames: number;
  /** Bytes the rendered RGBA pictures of one object may take together. */
  maxDecodedBytes: number;
  /** Extra CT windows the case's question needs (ctWindowsAskedFor), each another rendering. */
  extraCtWindows?: ReadonlyArray<keyof typeof CT_WINDOWS>;
  /** Whose object this is: the decode pool serves tenants in turn. */
  tenant?: string;
  /** The case's pictures still free; renderings are reserved from it before decoding. */
  pictures?: PictureBudget;
  /** The case's abort: a refused or cancelled case stops this object's decoding at once. */
  signal?: AbortSignal;
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

/** Segmentation Storage (binary or fractional masks, PS3.3 A.51) and Label Map Segmentation Storage: masks over other images. */
const SEGMENTATION_SOP_CLASSES = new Set(["1.2.840.10008.5.1.4.1.1.66.4", "1.2.840.10008.5.1.4.1.1.66.7"]);

/** The header attributes the main thread reads (the worker sends back these and no others). */
const HEADER_ATTRIBUTES = [
  "Rows", "Columns", "NumberOfFrames", "SamplesPerPixel", "BitsAllocated", "PhotometricInterpretation", "Modality",
  "BurnedInAnnotation", "WindowCenter", "WindowWidth", "SOPInstanceUID", "SeriesInstanceUID", "StudyInstanceUID",
  "SOPClassUID", "SegmentationType", "TotalPixelMatrixColumns", "TotalPixelMatrixRows", "DimensionOrganizationType", "ImageType",
  ...CONTEXT_ATTRIBUTES,
];

export { reservePictures, type PictureBudget };

/**
 * A DICOM Part 10 object as pictures for the model: representative frames, each windowed by
 * the rule in docs/imaging.md and encoded as PNG, with its provenance (UIDs, frame, window)
 * beside it and only de-identified context in its caption. The header is checked against
 * the limits (and the case's picture budget) before any pixel is decoded.
 */
export async function renderDicom(imageId: string, buf: Buffer, caption: string | undefined, limits: DicomLimits): Promise<LoadedImage[]> {
  const checked = await checkedStructure(imageId, buf, limits);
  // Parsing and decoding run in the decode pool's threads (decode-pool.ts): a large compressed
  // frame takes hundreds of milliseconds of WebAssembly, which must not stall the event loop.
  let plan: RenderPlan | LoadedImage[];
  try {
    plan = await withParsedDicom(limits.tenant ?? "", checked.file, HEADER_ATTRIBUTES, async (dicom) => {
      // A whole-slide instance sent alone is one pyramid level: read as a slide, not as frames.
      if (text(dicom.header.elements.SOPClassUID) !== WSI_SOP_CLASS) return renderParsed(imageId, checked, limits, dicom);
      checkPixelData(imageId, checked, dicom, checkedPixels(imageId, checked, limits, dicom));
      return slideFromInstance(imageId, dicom, caption, limits);
    }, limits.signal);
  } catch (e) {
    if (limits.signal?.aborted) throw limits.signal.reason;
    throw decodeRefusal(imageId, e, checked.transferSyntaxUid);
  }
  return Array.isArray(plan) ? plan : encodePictures(imageId, caption, plan);
}

/** The file as the parser will read it, its structure walked within limits, and what the walk found. */
interface CheckedFile {
  /** Inflated when deflated; relabelled implicit VR when its dataset is. */
  file: Buffer;
  shape: DatasetShape;
  /** The transfer syntax the sender wrote (provenance), which the file may no longer carry. */
  transferSyntaxUid: string;
  warnings: string[];
}

/**
 * Before any library parses the object: a deflated dataset is inflated in bounded steps (refused
 * past the decoded-bytes limit), then its structure is walked (element count, nesting depth,
 * lengths against the file). An implicit-VR dataset labelled explicit is read as implicit, as
 * pydicom and DCMTK do, with a warning in provenance.
 */
async function checkedStructure(imageId: string, buf: Buffer, limits: DicomLimits): Promise<CheckedFile> {
  try {
    const meta = readFileMeta(buf);
    let file = buf;
    if (meta.transferSyntaxUid === DEFLATED_LE) file = withTransferSyntax(buf, EXPLICIT_LE, await inflateBounded(imageId, buf.subarray(meta.end), limits.maxDecodedBytes));
    let shape = walkPart10(file);
    const warnings: string[] = [];
    if (shape.implicitVrMislabelled) {
      const writtenAs = TRANSFER_SYNTAXES[meta.transferSyntaxUid] ?? meta.transferSyntaxUid;
      if (UNCOMPRESSED.has(meta.transferSyntaxUid)) file = withTransferSyntax(file, IMPLICIT_LE, file.subarray(shape.datasetStart));
      // A compressed object keeps its syntax (its frames are encoded by it): its dataset is rewritten in explicit VR.
      else file = withTransferSyntax(file, meta.transferSyntaxUid, implicitToExplicit(file, shape.datasetStart, await dictionaryVrs()));
      shape = walkPart10(file);
      warnings.push(`the dataset is written in implicit VR although its transfer syntax (${writtenAs}) says explicit VR; read as implicit VR`);
    } else if (meta.transferSyntaxUid === EXPLICIT_BE) {
      // Read in little endian, every value swapped once here (the parser's own big endian
      // support swaps only 16-bit pixel data); provenance keeps the syntax the sender wrote.
      file = withTransferSyntax(file, EXPLICIT_LE, bigEndianToLittle(file, shape.datasetStart));
      shape = walkPart10(file);
    }
    if (shape.hiddenIcons.length) {
      // Icons are never sent; one in a private sequence whose VR was lost (UN) is left out so
      // that the parser, which reads its encapsulated pixel data as items, keeps its way.
      const parts: Buffer[] = [];
      let at = 0;
      for (const { start, end } of shape.hiddenIcons) {
        parts.push(file.subarray(at, start));
        at = end;
      }
      parts.push(file.subarray(at));
      warnings.push(`the private element${shape.hiddenIcons.length > 1 ? "s" : ""} ${shape.hiddenIcons.map((h) => h.tag).join(", ")}, a sequence without its VR holding encapsulated (icon) pixel data, ${shape.hiddenIcons.length > 1 ? "were" : "was"} left out before parsing`);
      file = Buffer.concat(parts);
      shape = walkPart10(file);
    }
    return { file, shape, transferSyntaxUid: meta.transferSyntaxUid, warnings };
  } catch (e) {
    if (!(e instanceof DatasetShapeError)) throw e;
    if (e.kind === "depth" || e.kind === "elements") throw refuse("PAYLOAD_TOO_LARGE", imageId, `${e.message}; refused before parsing`, { limit: e.kind === "depth" ? "sequence-depth" : "elements", max: e.kind === "depth" ? DEFAULT_WALK_LIMITS.maxDepth : DEFAULT_WALK_LIMITS.maxElements });
    if (e.kind === "truncated") throw refuse("INVALID_INPUT", imageId, `the file is truncated: ${e.message}`, { problem: "truncated" });
    throw refuse("INVALID_INPUT", imageId, `the file is not well-formed DICOM: ${e.message}`, { problem: "malformed" });
  }
}

/** The data dictionary's VR of a tag (dcmjs's dictionary, loaded only for the rare object that needs it). */
async function dictionaryVrs(): Promise<(group: number, element: number) => string> {
  const { default: dcmjs } = await import("dcmjs");
  const dictionary = dcmjs.data.DicomMetaDictionary.dictionary;
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(4, "0");
  return (group, element) => explicitVr(dictionary[`(${hex(group)},${hex(element)})`]?.vr, group, element);
}

/** A deflated dataset inflated by zlib in its own steps, stopped once it passes `max` bytes. */
async function inflateBounded(imageId: string, deflated: Buffer, max: number): Promise<Buffer> {
  try {
    return await inflateRawAsync(deflated, { maxOutputLength: max });
  } catch (e) {
    if ((e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" || e instanceof RangeError) {
      throw refuse("PAYLOAD_TOO_LARGE", imageId, `the deflated dataset inflates past ${max} bytes (MEDMMV_MAX_IMAGE_DECODED_BYTES); refused while inflating`, { limit: "inflated-bytes", max });
    }
    throw refuse("INVALID_INPUT", imageId, `the deflated dataset cannot be inflated (${reason(e)}); it is truncated or corrupt`, { problem: "truncated" });
  }
}

/**
 * Every frame's codestream must declare the size the DICOM header gives: a codec allocates by
 * its own header, so a 64×64 object whose SIZ claims 60000² would otherwise reach it.
 */
function checkCodestreams(imageId: string, checked: CheckedFile, tsUid: string, rows: number, columns: number, frames: number): void {
  if (!CODESTREAM_SYNTAXES.has(tsUid)) return;
  const { file, shape } = checked;
  const declared = shape.fragments.map((f) => declaredCodestreamSize(file.subarray(f.offset, f.offset + f.length))).filter((d) => d !== null);
  if (declared.length < frames) {
    throw refuse("INVALID_INPUT", imageId, `the pixel data holds ${declared.length} codestream(s) for ${frames} frame(s); the object is truncated or not encoded as ${TRANSFER_SYNTAXES[tsUid]}`, { problem: "truncated" });
  }
  for (const [k, d] of declared.entries()) {
    if (d.width !== columns || d.height !== rows) {
      throw refuse("INVALID_INPUT", imageId, `frame ${k + 1}'s ${d.codec} codestream declares ${d.width}×${d.height} where the header says ${columns}×${rows}; refused before decoding`, { problem: "codestream-size", frame: k + 1, declared: { width: d.width, height: d.height } });
    }
  }
}

/** Transfer syntaxes whose frames are codestreams with their own size (RLE and native are sized by the header). */
const CODESTREAM_SYNTAXES = new Set(Object.keys(TRANSFER_SYNTAXES).filter((uid) => uid.startsWith("1.2.840.10008.1.2.4.")));

/** The library inside dcmjs-imaging's WebAssembly that decodes each compressed syntax (a refusal names it when it stops). */
function codecOf(tsUid: string): string | undefined {
  if (tsUid === "1.2.840.10008.1.2.4.80" || tsUid === "1.2.840.10008.1.2.4.81") return "CharLS";
  if (tsUid === "1.2.840.10008.1.2.4.90" || tsUid === "1.2.840.10008.1.2.4.91") return "OpenJPEG";
  if (tsUid.startsWith("1.2.840.10008.1.2.4.20")) return "OpenJPH";
  if (/^1\.2\.840\.10008\.1\.2\.4\.(50|51|57|70)$/.test(tsUid)) return "libjpeg";
  return undefined;
}

/** A failure of the worker or the pool as a 4xx that says what went wrong. */
function decodeRefusal(imageId: string, e: unknown, tsUid = ""): unknown {
  if (e instanceof MedmmvError) return e;
  if (e instanceof DecodeWorkerFailure) {
    if (e.kind === "timeout") return refuse("UNPROCESSABLE", imageId, `${e.message}; the object is refused (its codestream is unusually costly to decode)`, { limit: "decode-time" });
    if (e.kind === "memory") return refuse("PAYLOAD_TOO_LARGE", imageId, e.message, { limit: "decoder-memory" });
    return refuse("INVALID_INPUT", imageId, `${e.message} on this object; it is malformed`);
  }
  if (e instanceof DicomWorkerError && e.stage === "render") {
    const frame = e.frame !== undefined ? e.frame + 1 : undefined;
    // A WebAssembly trap ("unreachable") is the codec stopping on the codestream (its C++
    // exception, built without exception support): named, with the syntax, not guessed at.
    const codec = codecOf(tsUid);
    if (codec && /unreachable|RuntimeError/i.test(reason(e))) {
      return refuse("INVALID_INPUT", imageId, `${frame ? `frame ${frame}` : "a frame"} cannot be decoded: the ${TRANSFER_SYNTAXES[tsUid] ?? tsUid} codec (${codec}, in dcmjs-imaging's WebAssembly) stopped on its codestream (${reason(e)}); the codestream is corrupt or written in a way ${codec} does not read`, { ...(frame ? { frame } : {}), codec });
    }
    return refuse("INVALID_INPUT", imageId, `${frame ? `frame ${frame}` : "a frame"} cannot be decoded (${reason(e)}); the pixel data is truncated or corrupt`, frame ? { frame } : undefined);
  }
  return refuse("INVALID_INPUT", imageId, `the file cannot be parsed (${reason(e)}); it is truncated or not DICOM Part 10`);
}

interface RenderPlan {
  elements: Record<string, unknown>;
  frameContents: Array<string | null> | null;
  tsUid: string;
  frames: number;
  monochrome: boolean;
  chosen: number[];
  renderings: Array<{ frame: number; window: DicomWindow | null; suffix: string }>;
  pictures: RenderedFrame[];
  warnings: string[];
}

/**
 * The parsed header checked before any frame is decoded: a syntax we read, pixel data, no
 * burned-in annotation, a frame size and count within the limits.
 */
function checkedPixels(imageId: string, checked: CheckedFile, limits: DicomLimits, dicom: ParsedDicom): { rows: number; columns: number; frames: number; tsUid: string } {
  const { elements } = dicom.header;
  const tsUid = checked.transferSyntaxUid;
  // What the object is comes first: a segmentation or a parametric map is refused as such,
  // whatever syntax carries it (a SEG in Deflated Image Frame Compression is still a SEG).
  if (dicom.header.floatPixelData) {
    throw refuse("UNSUPPORTED_MEDIA", imageId, `floating-point pixel data is not rendered (${dicom.header.floatPixelData === "double" ? "Double Float" : "Float"} Pixel Data, as a parametric map carries); send a rendered picture of it`, { problem: "floating-point-pixel-data" });
  }
  if (!dicom.header.hasPixelData) throw refuse("INVALID_INPUT", imageId, "the object has no pixel data (a report or structured document, not an image)");
  // Every kind of segmentation is masks over other images, whatever its depth: a FRACTIONAL or
  // LABELMAP one (8 bits, highdicom's test objects) rendered as a grey or palette picture before.
  const seg = SEGMENTATION_SOP_CLASSES.has(text(elements.SOPClassUID) ?? "") || text(elements.Modality) === "SEG";
  if (seg) {
    const kind = int(elements.BitsAllocated) === 1 ? "1-bit" : (text(elements.SegmentationType)?.toLowerCase().replace(/[^a-z]/g, "") ?? "8-bit");
    throw refuse("UNSUPPORTED_MEDIA", imageId, `a ${kind} segmentation (SEG) is not rendered: its frames are masks over other images, not pictures; send the images it segments`, { problem: "segmentation" });
  }
  if (int(elements.BitsAllocated) === 1) throw refuse("UNSUPPORTED_MEDIA", imageId, "1-bit pixel data is not rendered; send the image as 8 or 16 bits a sample", { problem: "1-bit-pixel-data" });
  if (!TRANSFER_SYNTAXES[tsUid]) {
    throw refuse("UNSUPPORTED_MEDIA", imageId, `transfer syntax ${tsUid} is not supported; send it uncompressed or as RLE, JPEG, JPEG-LS or JPEG 2000`, { transferSyntaxUid: tsUid });
  }
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
  return { rows, columns, frames, tsUid };
}

/** The pixel data against the header: uncompressed data holding every frame, every codestream declaring the header's size. */
function checkPixelData(imageId: string, checked: CheckedFile, dicom: ParsedDicom, { rows, columns, frames, tsUid }: { rows: number; columns: number; frames: number; tsUid: string }): void {
  const { elements } = dicom.header;
  // Uncompressed pixel data must hold every frame the header claims; a renderer would pad it.
  if (UNCOMPRESSED.has(tsUid)) {
    const need = nativeFrameBytes(elements, rows, columns) * frames;
    const have = Math.min(dicom.header.pixelBytes, bytesAfterPixelDataTag(checked.file, dicom.header.transferSyntaxUid));
    if (have < need) throw refuse("INVALID_INPUT", imageId, `the pixel data holds ${have} bytes where Rows × Columns × frames need ${need}; the file is truncated`, { pixelBytes: have, expected: need });
  }
  checkCodestreams(imageId, checked, tsUid, rows, columns, frames);
}

/**
 * Bytes one uncompressed frame takes: the subsampled YBR layouts store two samples a pixel
 * (4:2:2) or one and a half (4:2:0) whatever SamplesPerPixel says (PS3.3 C.7.6.3.1.2).
 */
function nativeFrameBytes(elements: Record<string, unknown>, rows: number, columns: number): number {
  const bytesPerSample = Math.ceil((int(elements.BitsAllocated) ?? 16) / 8);
  const photometric = text(elements.PhotometricInterpretation) ?? "";
  const samples = /_422$/.test(photometric) ? 2 : /_420$/.test(photometric) ? 1.5 : (int(elements.SamplesPerPixel) ?? 1);
  return Math.ceil(rows * columns * samples) * bytesPerSample;
}

async function renderParsed(imageId: string, checked: CheckedFile, limits: DicomLimits, dicom: ParsedDicom): Promise<RenderPlan> {
  const { elements } = dicom.header;
  const dims = checkedPixels(imageId, checked, limits, dicom);
  const { rows, columns, frames, tsUid } = dims;
  const own = objectWindow(elements);
  const monochrome = /^MONOCHROME[12]$/.test(text(elements.PhotometricInterpretation) ?? "");
  const chosen = representativeFrames(frames, limits.maxFrames);
  // Each frame's own window first (an enhanced object's Frame VOI LUT, per frame where they
  // differ), then the object's, then the modality's default; a question's windows on top.
  const firstWindow = (frame: number): DicomWindow | null => {
    if (!monochrome) return null;
    const fw = dicom.header.frameWindows?.[frame];
    if (fw) return { center: fw[0], width: fw[1], source: fw[2] ? "frame VOI LUT (functional groups)" : "object" };
    return own ?? defaultWindow(text(elements.Modality));
  };
  const extra = monochrome && text(elements.Modality) === "CT" ? (limits.extraCtWindows ?? []).map((name): DicomWindow => ({ ...CT_WINDOWS[name], source: `CT ${name} (asked for by the case)` })) : [];
  let renderings = chosen.flatMap((frame) => [firstWindow(frame), ...extra].map((window, w) => ({ frame, window, suffix: w === 0 ? "" : `-${extraNames(limits)[w - 1]}` })));
  const decodedBytes = renderings.length * rows * columns * 4;
  if (decodedBytes > limits.maxDecodedBytes) {
    throw refuse("PAYLOAD_TOO_LARGE", imageId, `${renderings.length} renderings of ${columns}×${rows} decode to ${decodedBytes} bytes; the limit is ${limits.maxDecodedBytes} bytes of pixels per image — send fewer frames or a smaller object`, { decodedBytes, maxDecodedBytes: limits.maxDecodedBytes });
  }
  checkPixelData(imageId, checked, dicom, dims);
  reservePictures(limits.pictures, renderings.length, imageId);
  const asItems = () => renderings.map(({ frame, window }) => ({ frame, window: window ? { center: window.center, width: window.width } : null }));
  // PET frames without a window of their own share one activity scale: each slice carries its
  // own RescaleSlope (chosen so its hottest pixel is stored near the top of the range), so a
  // window per frame's own range would paint every slice's maximum white, a background slice
  // as hot as the bladder. The frames sent are first read for their range (each with its own
  // slope), then all rendered with the union of those ranges, in the rescaled units (Bq/ml, SUV).
  const shareActivityScale = monochrome && text(elements.Modality) === "PT" && renderings.length > 1 && renderings.every((r) => r.window === null);
  if (shareActivityScale) {
    const ranges = (await dicom.render(asItems(), true)).map((p) => p.window);
    const shared = sharedRange(ranges);
    if (shared) renderings = renderings.map((r) => ({ ...r, window: { ...shared, source: "PET activity range of the frames sent" } }));
  }
  const pictures = await dicom.render(asItems());
  return { elements, frameContents: dicom.header.frameContents, tsUid, frames, monochrome, chosen, renderings, pictures, warnings: [...checked.warnings, ...dicom.header.warnings] };
}

/**
 * One window over several frames' value ranges (each a renderer's range window: centre ± width/2),
 * or null when a frame has none. The union keeps every frame's values inside it.
 */
function sharedRange(ranges: Array<{ center: number; width: number } | null>): { center: number; width: number } | null {
  if (ranges.some((r) => r === null)) return null;
  const lo = Math.min(...ranges.map((r) => r!.center - r!.width / 2));
  const hi = Math.max(...ranges.map((r) => r!.center + r!.width / 2));
  return { center: (lo + hi) / 2, width: Math.max(1, hi - lo) };
}

/** The rendered frames as PNG pictures of the case, with provenance and a de-identified caption. */
async function encodePictures(imageId: string, caption: string | undefined, plan: RenderPlan): Promise<LoadedImage[]> {
  const { elements, frameContents, tsUid, frames, monochrome, chosen, renderings, pictures, warnings } = plan;
  const context = deidentifiedContext(elements);
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
      ...(warnings.length ? { warnings } : {}),
    };
    const describe = [caption, `DICOM${context ? ` ${context}` : ""}`, frames > 1 ? `frame ${frame + 1} of ${frames}${frameContents?.[frame] ? ` (${frameContents[frame]})` : ""}` : "", used ? `window C${used.center}/W${used.width} (${used.source})` : ""];
    out.push(dicomPicture(`${chosen.length > 1 ? `${imageId}-frame${frame + 1}` : imageId}${suffix}`, png, rendered.width, rendered.height, describe, provenance));
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
