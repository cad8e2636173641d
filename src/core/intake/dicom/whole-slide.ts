import { loadSharp } from "../image-decoder.js";
import { MedmmvError, type ErrorCode } from "../../contracts/errors.js";
import type { LoadedImage, PixelRect, WsiProvenance } from "../../contracts/clinical-case.js";
import { dicomPicture } from "./dicom-picture.js";
import { DecodeWorkerFailure } from "./decode-pool.js";
import { withParsedDicom, type RenderedFrame } from "./dicom-worker.js";
import { tileObject } from "./tile-object.js";
import { declaredCodestreamSize } from "./codestream-size.js";
import { instanceFrames, instanceMetadataStreamed, WSI_SOP_CLASS, type DicomwebSeries } from "./dicomweb.js";
import { WsiMetadataReader, type SlideInstanceHeader } from "./wsi-metadata.js";
import { reservePictures, type PictureBudget } from "./picture-budget.js";
import { cellsIn, overviewLevel, pyramidLevels, tilesIn, wsiOptics, WsiShapeError, type WsiLevel, type WsiOptics, type WsiTile } from "./wsi-levels.js";
import { MAX_REGIONS, REGION_SIDE, REGION_ZOOM, tissueInFocusCells } from "./wsi-regions.js";
import { slideWindow, windowToRgb, type SlideWindow } from "./wsi-window.js";

export interface WholeSlideOptions {
  /** The long side a model reads (MEDMMV_IMAGE_MODEL_LONG_SIDE): the overview's level fits it. */
  longSide: number;
  /** Pixels a level read whole may have (MEDMMV_MAX_IMAGE_PIXELS). */
  maxPixels: number;
  /** Bytes the overview's RGB pixels may take (MEDMMV_MAX_IMAGE_DECODED_BYTES). */
  maxDecodedBytes?: number;
  /** The case asks about cells: regions at a finer level are sent besides the overview. */
  regions: boolean;
  /** Whose case this is: compressed tiles are decoded by the decode pool, which serves tenants in turn. */
  tenant?: string;
  pictures?: PictureBudget;
  /** The case's abort: every fetch and decode of the slide stops when it fires. */
  signal?: AbortSignal;
}

/** Bytes of one instance's metadata answer read at most (a level's header with every frame's position fits well within). */
export const MAX_METADATA_BYTES_PER_INSTANCE = 8 * 1024 * 1024;
/** Bytes of metadata answers read for one series, all instances together. */
export const MAX_METADATA_BYTES_PER_SERIES = 32 * 1024 * 1024;
/** The decoded-bytes budget of a picture when the caller gives none (MEDMMV_MAX_IMAGE_DECODED_BYTES's default). */
const DEFAULT_PICTURE_BYTES = 100_000_000;

/** Pyramid levels (instances) a series may have before it is refused unread. */
const MAX_WSI_INSTANCES = 64;
/** Tiles one picture may be assembled from (a 2048² overview of 256² tiles needs 64; tiny tiles would mean thousands of requests). */
export const MAX_TILES_PER_PICTURE = 1024;
/** Pixels of one tile: a codec allocates by it. */
const MAX_TILE_PIXELS = 4096 * 4096;
const JPEG_BASELINE = "1.2.840.10008.1.2.4.50";
const EXPLICIT_LE = "1.2.840.10008.1.2.1";

function refuse(code: ErrorCode, imageId: string, why: string, details?: Record<string, unknown>): MedmmvError {
  return new MedmmvError(code, `image "${imageId}" (whole-slide image): ${why}`, { details: { imageId, ...details } });
}

/**
 * A VL Whole Slide Microscopy series read as a pyramid over DICOMweb: each level's metadata
 * (never its pixel data), then only the tiles of the levels used, by frame retrieval.
 */
export async function readWholeSlide(series: DicomwebSeries, caption: string | undefined, o: WholeSlideOptions): Promise<LoadedImage[]> {
  const { imageId } = series;
  const wsi = series.instances.filter((i) => i.sopClassUid === WSI_SOP_CLASS);
  if (wsi.length > MAX_WSI_INSTANCES) throw refuse("PAYLOAD_TOO_LARGE", imageId, `the series has ${wsi.length} whole-slide instances; at most ${MAX_WSI_INSTANCES} pyramid levels are read`);
  const metadata: Array<{ uid: string } & SlideInstanceHeader> = [];
  let read = 0;
  for (const i of wsi) {
    // Each answer is read under the smaller of its own cap and what the series has left, and
    // parsed as it arrives, keeping only what the reader needs (wsi-metadata.ts).
    const left = MAX_METADATA_BYTES_PER_SERIES - read;
    const cap = Math.min(MAX_METADATA_BYTES_PER_INSTANCE, left);
    const tooLarge =
      cap < MAX_METADATA_BYTES_PER_INSTANCE
        ? `the series' metadata answers pass ${MAX_METADATA_BYTES_PER_SERIES} bytes after ${metadata.length + 1} of its ${wsi.length} whole-slide instances; a slide's headers are not that large`
        : `an instance's metadata answer is larger than ${Math.min(MAX_METADATA_BYTES_PER_INSTANCE, series.options.maxBytes)} bytes; a whole-slide level's header is not that large`;
    const got = await instanceMetadataStreamed(series, i.uid, cap, () => new WsiMetadataReader(), tooLarge);
    read += got.bytes;
    metadata.push({ uid: i.uid, ...got.value });
  }
  const ids = { study: series.ref.study, series: series.url.split("/").pop()! };
  return pyramidPictures(imageId, metadata, ids, dicomwebTiles(series, o.tenant ?? ""), caption, o);
}

/** Samples per pixel a decoded tile is handed on in: grey, RGB, or RGBA as the decode pool's renderer gives it. */
export type TileChannels = 1 | 3 | 4;

/**
 * Where a tile source puts what it decodes: each tile is pasted onto the picture as it comes
 * and never kept, so what a picture holds decoded is its canvas and the tiles in flight.
 */
export interface TileSink {
  /**
   * Called before each fetch or decode with the decoded bytes the source will hold at once
   * for it (its tiles in flight): refuses (413) when the picture's canvas and those bytes pass
   * its decoded-bytes budget, and stops when the case is aborted.
   */
  reserve(inFlightBytes: number): void;
  /**
   * Tile `k` of the list asked for, tileWidth × tileHeight pixels of `channels` samples: pasted
   * at once, not kept. A 16-bit greyscale level's tiles come as their stored values (Uint16Array, one sample).
   */
  put(k: number, pixels: Uint8Array | Uint16Array, channels: TileChannels): void;
  signal?: AbortSignal;
}

/** Decoded bytes of one tile at its largest (RGBA, as the decode pool's renderer returns it): a source holds one at a time. */
export function tileInFlightBytes(level: Pick<WsiLevel, "tileWidth" | "tileHeight">): number {
  return level.tileWidth * level.tileHeight * 4;
}

/** A level of 16-bit greyscale tiles (fluorescence): read as stored values, windowed once for the slide (wsi-window.ts). */
export function storesValues(level: Pick<WsiLevel, "bitsAllocated" | "samplesPerPixel">): boolean {
  return level.bitsAllocated === 16 && level.samplesPerPixel === 1;
}

/** Bytes a picture of the level holds per pixel: its RGB canvas, and for 16-bit grey the stored values it is windowed from. */
function heldBytesPerPixel(level: WsiLevel): number {
  return storesValues(level) ? 5 : 3;
}

/** Reads the tiles of a level, handing each to the sink as it is decoded (one decoded tile in flight at a time). */
export type TileSource = (level: WsiLevel, tiles: readonly WsiTile[], sink: TileSink) => Promise<{ transferSyntaxUid: string; warnings?: string[] }>;

/**
 * The pictures of a slide, whatever holds its tiles (a PACS, or one instance sent whole): the
 * overview is the finest level that fits the model's long side, assembled from its tiles;
 * when the case asks about cells, a few of the overview's most tissue-rich areas are read at
 * a finer level as well (wsi-regions.ts). Each picture's provenance gives its level, spacing
 * and region.
 */
export async function pyramidPictures(imageId: string, metadata: ReadonlyArray<{ uid: string } & SlideInstanceHeader>, ids: { study?: string; series?: string }, source: TileSource, caption: string | undefined, o: WholeSlideOptions): Promise<LoadedImage[]> {
  let levels: WsiLevel[];
  try {
    levels = pyramidLevels(metadata);
  } catch (e) {
    if (e instanceof WsiShapeError) throw refuse("INVALID_INPUT", imageId, e.message);
    throw e;
  }
  if (levels.length === 0) throw refuse("NOT_FOUND", imageId, "the slide has no pyramid level (only label, overview or thumbnail images)");
  for (const l of levels) {
    const eightBit = l.bitsAllocated === 8 && (l.samplesPerPixel === 1 || l.samplesPerPixel === 3);
    const greyValues = storesValues(l) && (l.photometric === "MONOCHROME2" || l.photometric === "MONOCHROME1");
    if (!eightBit && !greyValues) throw refuse("UNSUPPORTED_MEDIA", imageId, `level ${l.index} has ${l.samplesPerPixel} samples of ${l.bitsAllocated} bits (${l.photometric}); whole-slide tiles are read as 8-bit grey or colour, or 16-bit greyscale`);
  }
  const optics = wsiOptics(metadata.map((m) => m.meta));
  // A level is read whole only when it is within the per-picture limits: tile count, pixels,
  // and decoded bytes held (its canvas and the one tile in flight; tiles are pasted as they come).
  const budget = o.maxDecodedBytes ?? DEFAULT_PICTURE_BYTES;
  const whole = (l: WsiLevel) => ({ x: 0, y: 0, width: l.width, height: l.height });
  const fits = (l: WsiLevel) => cellsIn(l, whole(l)) <= MAX_TILES_PER_PICTURE && l.width * l.height <= o.maxPixels && l.width * l.height * heldBytesPerPixel(l) + tileInFlightBytes(l) <= budget;
  const ov = overviewLevel(levels, o.longSide > 0 ? o.longSide : 2048, fits);
  if (ov.width * ov.height > o.maxPixels) throw refuse("PAYLOAD_TOO_LARGE", imageId, `its coarsest level is ${ov.width}×${ov.height}, over ${o.maxPixels} pixels; the slide has no level small enough to read whole`);
  if (o.maxDecodedBytes !== undefined && ov.width * ov.height * heldBytesPerPixel(ov) > o.maxDecodedBytes) throw refuse("PAYLOAD_TOO_LARGE", imageId, `its coarsest level of ${ov.width}×${ov.height} decodes to ${ov.width * ov.height * heldBytesPerPixel(ov)} bytes, over ${o.maxDecodedBytes}; send the slide's pyramid (e.g. from a PACS over DICOMweb)`);
  reservePictures(o.pictures, 1, imageId);

  // A 16-bit greyscale slide gets one window for all its pictures: the series' own, else the overview's range.
  const overview = await assemble(imageId, source, ov, whole(ov), o, (values) => slideWindow(values, ownWindow(metadata)));
  // The overview is sent at most at the model's long side (the coarsest level may be larger).
  const fit = o.longSide > 0 ? Math.min(1, o.longSide / Math.max(ov.width, ov.height)) : 1;
  const shown = { width: Math.max(1, Math.round(ov.width * fit)), height: Math.max(1, Math.round(ov.height * fit)) };
  const common = { levels: levels.length, overviewId: imageId, overviewWidth: shown.width, overviewHeight: shown.height, ...iccAndOptics(optics) };
  const out: LoadedImage[] = [
    await picture(imageId, overview.rgb, ov.width, ov.height, shown, overview, ids, ov, [caption, `whole-slide microscopy (SM), overview: level ${ov.index} of ${levels.length} (0 = full resolution), ${ov.width}×${ov.height} pixels${spacingText(ov)}`], {
      role: "overview", level: ov.index, totalColumns: ov.width, totalRows: ov.height, ...spacing(ov), region: whole(ov), overviewRegion: { x: 0, y: 0, ...shown }, tiles: overview.tiles, levelFrames: ov.frames, ...common,
    }),
  ];
  if (!o.regions) return out;

  // The region level: at most REGION_ZOOM times finer than the overview's; a slide of one level is zoomed within it.
  const finer = levels.filter((l) => l.width > shown.width * 1.5);
  const zoomed = finer.find((l) => l.width <= shown.width * REGION_ZOOM * 1.01) ?? finer[finer.length - 1];
  const room = Math.min(MAX_REGIONS, o.pictures?.left ?? MAX_REGIONS);
  if (!zoomed || room < 1) return out;
  const zoom = zoomed.width / ov.width;
  const cells = tissueInFocusCells(overview.rgb, ov.width, ov.height, REGION_SIDE / zoom, room);
  reservePictures(o.pictures, cells.length, imageId);
  for (const [k, cell] of cells.entries()) {
    const x = Math.min(Math.round(cell.x * zoom), zoomed.width - 1);
    const y = Math.min(Math.round(cell.y * zoom), zoomed.height - 1);
    const region = { x, y, width: Math.min(REGION_SIDE, zoomed.width - x), height: Math.min(REGION_SIDE, zoomed.height - y) };
    const read = await assemble(imageId, source, zoomed, region, o, (values) => overview.window ?? slideWindow(values, ownWindow(metadata)));
    const overviewRegion = scaleRect(region, shown.width / zoomed.width, shown.height / zoomed.height);
    const id = `${imageId}-region${k + 1}`;
    const zoomText = (zoomed.width / shown.width).toFixed(1);
    out.push(
      await picture(id, read.rgb, region.width, region.height, { width: region.width, height: region.height }, read, ids, zoomed, [caption, `whole-slide microscopy (SM), region ${k + 1} of ${cells.length} at level ${zoomed.index} (${zoomText}× the overview${spacingText(zoomed)}): x ${region.x}, y ${region.y}, ${region.width}×${region.height} of the level's ${zoomed.width}×${zoomed.height}; on the overview "${imageId}" at x ${overviewRegion.x}, y ${overviewRegion.y}, ${overviewRegion.width}×${overviewRegion.height}`], {
        role: "region", level: zoomed.index, totalColumns: zoomed.width, totalRows: zoomed.height, ...spacing(zoomed), region, overviewRegion, tiles: read.tiles, levelFrames: zoomed.frames,
        selection: `rank ${k + 1} by focus of the overview's ${cell.among} ${Math.round(REGION_SIDE / zoom)}-pixel grid cells that are mostly tissue: ${Math.round(cell.tissue * 100)} % tissue (saturation above Otsu's ${cell.threshold.toFixed(2)}, not darker than stain), focus ${cell.focus.toFixed(1)} (mean squared Laplacian of luminance)`, ...common,
      }),
    );
  }
  return out;
}

/** The series' own WindowCenter/WindowWidth (first values of the first instance that has both). */
function ownWindow(metadata: ReadonlyArray<SlideInstanceHeader>): { center: number; width: number } | null {
  for (const { meta } of metadata) {
    const center = Number(meta["00281050"]?.Value?.[0]);
    const width = Number(meta["00281051"]?.Value?.[0]);
    if (meta["00281050"]?.Value?.length && meta["00281051"]?.Value?.length && Number.isFinite(center) && Number.isFinite(width) && width >= 1) return { center, width };
  }
  return null;
}

function spacing(l: WsiLevel): { pixelSpacingMm?: [number, number] } {
  return l.pixelSpacingMm ? { pixelSpacingMm: l.pixelSpacingMm } : {};
}

function spacingText(l: WsiLevel): string {
  return l.pixelSpacingMm ? `, ${(l.pixelSpacingMm[1] * 1000).toFixed(2)} µm per pixel` : "";
}

function iccAndOptics(optics: WsiOptics): Pick<WsiProvenance, "iccProfile" | "opticalPaths"> {
  // sharp cannot take an input ICC profile for raw pixels assembled from tiles, so it is recorded, not applied.
  return { iccProfile: optics.iccProfile ? "present in OpticalPathSequence; recorded, not applied (pixels sent as stored)" : "none", opticalPaths: optics.opticalPaths };
}

function scaleRect(r: PixelRect, sx: number, sy: number): PixelRect {
  const x = Math.floor(r.x * sx);
  const y = Math.floor(r.y * sy);
  return { x, y, width: Math.max(1, Math.round((r.x + r.width) * sx) - x), height: Math.max(1, Math.round((r.y + r.height) * sy) - y) };
}

/** A picture of the slide as PNG, with its provenance (the level's first instance stands for the level). */
async function picture(id: string, rgb: Buffer, width: number, height: number, shown: { width: number; height: number }, read: { transferSyntaxUid: string; warnings: string[]; window?: SlideWindow }, ids: { study?: string; series?: string }, level: WsiLevel, describe: Array<string | undefined>, wsi: WsiProvenance): Promise<LoadedImage> {
  const sharp = await loadSharp();
  let img = sharp(rgb, { raw: { width, height, channels: 3 } });
  if (shown.width !== width || shown.height !== height) img = img.resize(shown.width, shown.height, { fit: "fill" });
  const png = await img.png().toBuffer();
  return dicomPicture(id, png, shown.width, shown.height, describe, { sopInstanceUid: level.instances[0]!, ...(ids.series ? { seriesInstanceUid: ids.series } : {}), ...(ids.study ? { studyInstanceUid: ids.study } : {}), modality: "SM", transferSyntaxUid: read.transferSyntaxUid, frame: 1, frames: 1, ...(read.window ? { window: { center: read.window.center, width: read.window.width, source: read.window.source } } : {}), ...(read.warnings.length ? { warnings: read.warnings } : {}), wsi });
}

/** Frames asked for in one request: a multipart answer of that many stays well under the byte cap. */
function framesPerRequest(series: DicomwebSeries, level: WsiLevel): number {
  const raw = level.tileWidth * level.tileHeight * level.samplesPerPixel;
  return Math.max(1, Math.min(64, Math.floor(series.options.maxBytes / (raw * 1.1 + 1024))));
}

/** Codestream syntaxes the decode pool's renderer decodes (besides JPEG baseline, which libvips decodes here). */
const POOL_SYNTAXES = new Set([
  "1.2.840.10008.1.2.4.51", "1.2.840.10008.1.2.4.57", "1.2.840.10008.1.2.4.70", "1.2.840.10008.1.2.4.80", "1.2.840.10008.1.2.4.81",
  "1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.91", "1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.202", "1.2.840.10008.1.2.4.203",
]);

/**
 * Tiles from a PACS by WADO-RS frame retrieval, several frames of an instance per request, as
 * stored: JPEG tiles stay JPEG on the wire and are decoded here after their SOF is checked;
 * tiles in another codec the renderer has (JPEG 2000, HTJ2K, JPEG-LS, JPEG lossless) are
 * decoded by the decode pool, wrapped as one small multi-frame object (tile-object.ts); any
 * other frame is asked for again uncompressed, which the server may transcode.
 */
function dicomwebTiles(series: DicomwebSeries, tenant: string): TileSource {
  return async (level, tiles, sink) => {
    const syntaxes = new Set<string>();
    const warnings = new Set<string>();
    const perInstance = new Map<string, number[]>();
    for (const [k, t] of tiles.entries()) {
      const list = perInstance.get(t.instance);
      if (list) list.push(k);
      else perInstance.set(t.instance, [k]);
    }
    const batch = framesPerRequest(series, level);
    for (const [uid, indexes] of perInstance) {
      for (let k = 0; k < indexes.length; k += batch) {
        const chunk = indexes.slice(k, k + batch);
        // The budget (and the case's abort) is checked before each fetch, not after the decoding:
        // the frames come compressed (at most the answer cap) and are decoded one at a time.
        sink.reserve(tileInFlightBytes(level));
        const stored = await instanceFrames(series, uid, chunk.map((j) => tiles[j]!.frame), true);
        const ts = stored.transferSyntaxUid;
        if (ts && POOL_SYNTAXES.has(ts)) {
          await poolTiles(series.imageId, tenant, ts, level, stored.parts, warnings, (j, pixels) => sink.put(chunk[j]!, pixels, storesValues(level) ? 1 : 4), sink.signal);
          syntaxes.add(ts);
          continue;
        }
        // One tile decoded at a time and pasted before the next: a batch's decoded pixels are never all held.
        const missing: number[] = [];
        for (const [j, bytes] of stored.parts.entries()) {
          sink.signal?.throwIfAborted();
          const tile = await tilePixels(series.imageId, bytes, level);
          if (tile === null) missing.push(j);
          else {
            syntaxes.add(tile.kind === "jpeg" ? JPEG_BASELINE : EXPLICIT_LE);
            sink.put(chunk[j]!, tile.pixels, tile.channels);
          }
        }
        if (missing.length === 0) continue;
        sink.reserve(tileInFlightBytes(level));
        const plain = (await instanceFrames(series, uid, missing.map((j) => tiles[chunk[j]!]!.frame), false)).parts;
        for (const [m, j] of missing.entries()) {
          const tile = await tilePixels(series.imageId, plain[m]!, level);
          if (tile === null) throw refuse("UNSUPPORTED_MEDIA", series.imageId, `frame ${tiles[chunk[j]!]!.frame} of a level-${level.index} instance is neither JPEG nor ${level.tileWidth}×${level.tileHeight} uncompressed pixels, even when asked uncompressed`);
          syntaxes.add(EXPLICIT_LE);
          sink.put(chunk[j]!, tile.pixels, tile.channels);
        }
      }
    }
    return { transferSyntaxUid: syntaxes.size === 1 ? [...syntaxes][0]! : [...syntaxes].join(" + ") || EXPLICIT_LE, warnings: [...warnings] };
  };
}

/**
 * The photometric interpretation a JPEG 2000 tile is decoded with. YBR_FULL_422 describes
 * subsampled chroma, which a codestream of full-resolution components without a multiple
 * component transform (COD's MCT = 0) cannot hold: such tiles (OrthancWSIDicomizer writes them
 * when it re-encodes JPEG tiles) are RGB, and are read so, with a warning in provenance.
 */
export function j2kPhotometric(tsUid: string, photometric: string, codestream: Buffer): string {
  if (!/^1\.2\.840\.10008\.1\.2\.4\.(90|91|201|202|203)$/.test(tsUid) || photometric !== "YBR_FULL_422") return photometric;
  const siz = codestream.indexOf(Buffer.from([0xff, 0x51]));
  if (siz === -1 || siz + 40 > codestream.length) return photometric;
  // COD follows SIZ in the main header: searched for after SIZ's own segment.
  const cod = codestream.indexOf(Buffer.from([0xff, 0x52]), siz + 2 + codestream.readUInt16BE(siz + 2));
  if (cod === -1 || cod + 8 >= codestream.length) return photometric;
  const components = codestream.readUInt16BE(siz + 38);
  const subsampled = Array.from({ length: Math.min(components, 4) }, (_, c) => codestream.subarray(siz + 41 + 3 * c, siz + 43 + 3 * c)).some((b) => b.length < 2 || b[0] !== 1 || b[1] !== 1);
  return !subsampled && codestream[cod + 8] === 0 ? "RGB" : photometric;
}

/**
 * Compressed tiles decoded by the decode pool (its codecs, limits and time limit), each checked
 * against the tile size first, then decoded one at a time and handed on (RGBA) as it comes
 * back, before the next is asked for: one decoded tile is in flight at a time.
 */
async function poolTiles(imageId: string, tenant: string, tsUid: string, level: WsiLevel, codestreams: Buffer[], warnings: Set<string>, put: (j: number, pixels: Uint8Array | Uint16Array) => void, signal?: AbortSignal): Promise<void> {
  for (const c of codestreams) {
    const d = declaredCodestreamSize(c);
    if (!d || d.width !== level.tileWidth || d.height !== level.tileHeight) throw refuse("INVALID_INPUT", imageId, `a level-${level.index} tile's codestream declares ${d?.width ?? "?"}×${d?.height ?? "?"} where the header says ${level.tileWidth}×${level.tileHeight}; refused before decoding`);
  }
  const photometric = j2kPhotometric(tsUid, level.photometric, codestreams[0]!);
  if (photometric !== level.photometric) warnings.add(`level ${level.index}'s tiles are labelled ${level.photometric}, but their JPEG 2000 codestreams hold full-resolution components without a colour transform; read as RGB`);
  const file = tileObject(tsUid, { rows: level.tileHeight, columns: level.tileWidth, samplesPerPixel: level.samplesPerPixel, bitsAllocated: level.bitsAllocated, photometric }, codestreams);
  try {
    await withParsedDicom(
      tenant,
      file,
      [],
      async (dicom) => {
        for (let k = 0; k < codestreams.length; k++) {
          if (storesValues(level)) {
            const [f] = await dicom.render([{ frame: k, window: null, values: true }], true);
            put(k, decodedValues(imageId, level, f));
            continue;
          }
          const [f] = await dicom.render([{ frame: k, window: null }], true);
          put(k, decodedTile(imageId, level, f));
        }
        await dicom.render([]);
      },
      signal,
    );
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    if (e instanceof MedmmvError) throw e;
    throw refuse(e instanceof DecodeWorkerFailure && e.kind === "timeout" ? "UNPROCESSABLE" : "INVALID_INPUT", imageId, `level ${level.index}'s tiles cannot be decoded (${(e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 200)})`);
  }
}

/** A tile the renderer gave back, checked to be the level's tile size (RGBA). */
export function decodedTile(imageId: string, level: WsiLevel, f: RenderedFrame | undefined): Uint8Array {
  if (!f || f.width !== level.tileWidth || f.height !== level.tileHeight || f.pixels.byteLength < f.width * f.height * 4) {
    throw refuse("INVALID_INPUT", imageId, `a level-${level.index} tile decoded to ${f ? `${f.width}×${f.height}` : "nothing"} where the header says ${level.tileWidth}×${level.tileHeight}`);
  }
  return new Uint8Array(f.pixels);
}

/** A 16-bit greyscale tile's stored values the renderer gave back, checked to be the level's tile size. */
export function decodedValues(imageId: string, level: WsiLevel, f: RenderedFrame | undefined): Uint16Array {
  if (!f || f.width !== level.tileWidth || f.height !== level.tileHeight || f.pixels.byteLength < f.width * f.height * 2) {
    throw refuse("INVALID_INPUT", imageId, `a level-${level.index} tile decoded to ${f ? `${f.width}×${f.height}` : "nothing"} where the header says ${level.tileWidth}×${level.tileHeight} 16-bit values`);
  }
  return new Uint16Array(f.pixels, 0, f.width * f.height);
}

/**
 * The rectangle `r` of a level's total pixel matrix as RGB, from the tiles that meet it only,
 * each pasted as it is decoded. Before any fetch, the tiles needed (computed, not listed) and
 * the bytes held (the canvas and a tile in flight) are held to the limits: a PACS that declares
 * huge tiles, or many of them, is refused (413) unread; before each fetch the source reserves
 * what it will hold decoded, checked again. Areas no tile covers (a sparse level) are white, as
 * bare glass is.
 */
async function assemble(imageId: string, source: TileSource, level: WsiLevel, r: PixelRect, o: WholeSlideOptions, windowFor: (values: Uint16Array) => SlideWindow): Promise<{ rgb: Buffer; tiles: number; transferSyntaxUid: string; warnings: string[]; window?: SlideWindow }> {
  if (level.tileWidth * level.tileHeight > MAX_TILE_PIXELS) throw refuse("PAYLOAD_TOO_LARGE", imageId, `level ${level.index}'s tiles are ${level.tileWidth}×${level.tileHeight}, over ${MAX_TILE_PIXELS} pixels each`);
  const cells = cellsIn(level, r);
  if (cells > MAX_TILES_PER_PICTURE) throw refuse("PAYLOAD_TOO_LARGE", imageId, `a picture of level ${level.index} would need ${cells} tiles of ${level.tileWidth}×${level.tileHeight} (at most ${MAX_TILES_PER_PICTURE} are read for one picture)`);
  const tiles = tilesIn(level, r);
  const budget = o.maxDecodedBytes ?? DEFAULT_PICTURE_BYTES;
  const canvasBytes = r.width * r.height * heldBytesPerPixel(level);
  const need = canvasBytes + tileInFlightBytes(level);
  if (need > budget) throw refuse("PAYLOAD_TOO_LARGE", imageId, `a picture of level ${level.index} (${r.width}×${r.height}) from tiles of ${level.tileWidth}×${level.tileHeight} holds ${need} bytes decoded (the picture and a tile being pasted), over ${budget} (MEDMMV_MAX_IMAGE_DECODED_BYTES); nothing was fetched`, { decodedBytes: need, maxDecodedBytes: budget });
  // Every byte of a canvas its tiles cover is written by them (all must come back); only a
  // sparse one needs white first, filled in slices so a 50 MB fill does not hold the event loop.
  const covered = new Set(tiles.map((t) => `${t.x},${t.y}`)).size === cellsIn(level, r);
  // A 16-bit greyscale level is pasted as stored values (uncovered cells 0: a fluorescence slide's
  // bare glass is dark) and windowed once all have come.
  const values = storesValues(level) ? new Uint16Array(r.width * r.height) : null;
  const canvas = values ? Buffer.alloc(0) : covered ? Buffer.allocUnsafeSlow(canvasBytes) : await whiteCanvas(canvasBytes);
  const pasted = new Uint8Array(tiles.length);
  const sink: TileSink = {
    reserve(inFlightBytes) {
      o.signal?.throwIfAborted();
      if (canvasBytes + inFlightBytes > budget) throw refuse("PAYLOAD_TOO_LARGE", imageId, `level ${level.index}'s picture and the ${inFlightBytes} bytes of tiles its reader would hold decoded at once pass ${budget} bytes (MEDMMV_MAX_IMAGE_DECODED_BYTES); refused before fetching them`, { decodedBytes: canvasBytes + inFlightBytes, maxDecodedBytes: budget });
    },
    put(k, pixels, channels) {
      const tile = tiles[k];
      if (!tile || pasted[k] || pixels.length < level.tileWidth * level.tileHeight * channels) throw refuse("UNPROCESSABLE", imageId, `level ${level.index}'s tile ${k + 1} came back ${!tile ? "unasked" : pasted[k] ? "twice" : "short"}`);
      pasted[k] = 1;
      if (values) {
        if (!(pixels instanceof Uint16Array) || channels !== 1) throw refuse("UNPROCESSABLE", imageId, `level ${level.index}'s tile ${k + 1} came back as 8-bit pixels where 16-bit values were asked for`);
        pasteValues(values, r, pixels, tile, level);
      } else {
        if (pixels instanceof Uint16Array) throw refuse("UNPROCESSABLE", imageId, `level ${level.index}'s tile ${k + 1} came back as 16-bit values where 8-bit pixels were asked for`);
        paste(canvas, r, pixels, channels, tile, level);
      }
    },
    ...(o.signal ? { signal: o.signal } : {}),
  };
  const read = await source(level, tiles, sink);
  if (pasted.some((p) => p === 0)) throw refuse("UNPROCESSABLE", imageId, `level ${level.index}'s tiles did not all come back`);
  const done = { tiles: tiles.length, transferSyntaxUid: read.transferSyntaxUid, warnings: read.warnings ?? [] };
  if (!values) return { rgb: canvas, ...done };
  const window = windowFor(values);
  return { rgb: windowToRgb(values, window, level.photometric === "MONOCHROME1"), window, ...done };
}

/** Bytes of the canvas filled between turns of the event loop. */
const FILL_SLICE = 4 * 1024 * 1024;

/** A white canvas of `bytes`, filled a slice at a time. */
async function whiteCanvas(bytes: number): Promise<Buffer> {
  const canvas = Buffer.allocUnsafeSlow(bytes);
  for (let at = 0; at < bytes; at += FILL_SLICE) {
    canvas.fill(255, at, Math.min(bytes, at + FILL_SLICE));
    if (at + FILL_SLICE < bytes) await new Promise((r) => setImmediate(r));
  }
  return canvas;
}

/**
 * One tile's pixels (tileWidth × tileHeight, grey or RGB, as stored; a 16-bit greyscale level's
 * stored values), or null when it is neither JPEG nor plain pixels. A JPEG's own frame header must declare the tile's size before it is decoded (a tile
 * claiming 60000² would otherwise reach the codec), and libvips is held to that many pixels.
 */
async function tilePixels(imageId: string, bytes: Buffer, level: WsiLevel): Promise<{ pixels: Uint8Array | Uint16Array; channels: TileChannels; kind: "jpeg" | "raw" } | null> {
  const { tileWidth: w, tileHeight: h } = level;
  if (storesValues(level)) {
    // Uncompressed 16-bit values, little endian (the explicit VR little endian frames asked for);
    // copied when the part does not start on an even byte, as a Uint16Array needs.
    const need16 = w * h * 2;
    if (bytes.length !== need16 && bytes.length !== need16 + 1) return null;
    const aligned = bytes.byteOffset % 2 === 0 ? bytes : Buffer.from(bytes.subarray(0, need16));
    return { pixels: new Uint16Array(aligned.buffer, aligned.byteOffset, w * h), channels: 1, kind: "raw" };
  }
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    const declared = declaredCodestreamSize(bytes);
    if (!declared || declared.width !== w || declared.height !== h) {
      throw refuse("INVALID_INPUT", imageId, `a level-${level.index} tile's JPEG declares ${declared?.width ?? "?"}×${declared?.height ?? "?"} where the header says ${w}×${h}; refused before decoding`);
    }
    try {
      const { data, info } = await (await loadSharp())(bytes, { limitInputPixels: w * h, failOn: "error" }).removeAlpha().toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
      if (info.width !== w || info.height !== h || (info.channels !== 1 && info.channels !== 3)) throw new Error(`decoded to ${info.width}×${info.height}×${info.channels}`);
      return { pixels: data, channels: info.channels, kind: "jpeg" };
    } catch (e) {
      throw refuse("INVALID_INPUT", imageId, `a level-${level.index} tile cannot be decoded (${(e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 200)})`);
    }
  }
  const need = w * h * level.samplesPerPixel;
  // An uncompressed frame (an odd length is padded by one byte).
  // The frame is a view of the answer already held: nothing more is decoded.
  if (bytes.length === need || bytes.length === need + 1) return { pixels: bytes.subarray(0, need), channels: level.samplesPerPixel === 3 ? 3 : 1, kind: "raw" };
  return null;
}

/** The part of tile `t` (clipped to its level, whose edge tiles may hang over) that falls inside `r`, in level pixels; null: none. */
function overlapOf(r: PixelRect, t: WsiTile, level: WsiLevel): { x0: number; x1: number; y0: number; y1: number } | null {
  const x0 = Math.max(r.x, t.x);
  const x1 = Math.min(r.x + r.width, t.x + level.tileWidth, level.width);
  const y0 = Math.max(r.y, t.y);
  const y1 = Math.min(r.y + r.height, t.y + level.tileHeight, level.height);
  return x1 > x0 && y1 > y0 ? { x0, x1, y0, y1 } : null;
}

/** Copy the part of a 16-bit greyscale tile's values that falls inside `r` onto the values canvas of `r`. */
function pasteValues(canvas: Uint16Array, r: PixelRect, tile: Uint16Array, t: WsiTile, level: WsiLevel): void {
  const o = overlapOf(r, t, level);
  if (!o) return;
  const { x0, x1, y0, y1 } = o;
  for (let y = y0; y < y1; y++) {
    const from = (y - t.y) * level.tileWidth + (x0 - t.x);
    canvas.set(tile.subarray(from, from + (x1 - x0)), (y - r.y) * r.width + (x0 - r.x));
  }
}

/**
 * Copy the part of `tile` (`channels` samples a pixel) that falls inside `r` onto the RGB
 * canvas of `r`: grey spread to three samples, RGBA's alpha dropped, no copy of the tile made.
 */
function paste(canvas: Buffer, r: PixelRect, tile: Uint8Array, channels: TileChannels, t: WsiTile, level: WsiLevel): void {
  const o = overlapOf(r, t, level);
  if (!o) return;
  const { x0, x1, y0, y1 } = o;
  for (let y = y0; y < y1; y++) {
    const from = ((y - t.y) * level.tileWidth + (x0 - t.x)) * channels;
    const to = ((y - r.y) * r.width + (x0 - r.x)) * 3;
    if (channels === 3) {
      canvas.set(tile.subarray(from, from + (x1 - x0) * 3), to);
      continue;
    }
    for (let i = from, o = to, end = from + (x1 - x0) * channels; i < end; i += channels, o += 3) {
      canvas[o] = tile[i]!;
      canvas[o + 1] = tile[i + (channels === 1 ? 0 : 1)]!;
      canvas[o + 2] = tile[i + (channels === 1 ? 0 : 2)]!;
    }
  }
}
