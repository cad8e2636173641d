import sharp from "sharp";
import { MedmmvError, type ErrorCode } from "../../contracts/errors.js";
import type { LoadedImage, PixelRect, WsiProvenance } from "../../contracts/clinical-case.js";
import { dicomPicture } from "./dicom-picture.js";
import { declaredCodestreamSize } from "./codestream-size.js";
import { instanceFrames, instanceMetadata, WSI_SOP_CLASS, type DicomwebSeries, type QidoItem } from "./dicomweb.js";
import { reservePictures, type PictureBudget } from "./picture-budget.js";
import { overviewLevel, pyramidLevels, tilesIn, wsiOptics, WsiShapeError, type WsiLevel, type WsiOptics, type WsiTile } from "./wsi-levels.js";
import { MAX_REGIONS, REGION_SIDE, REGION_ZOOM, tissueRichCells } from "./wsi-regions.js";

export interface WholeSlideOptions {
  /** The long side a model reads (MEDMMV_IMAGE_MODEL_LONG_SIDE): the overview's level fits it. */
  longSide: number;
  /** Pixels a level read whole may have (MEDMMV_MAX_IMAGE_PIXELS). */
  maxPixels: number;
  /** Bytes the overview's RGB pixels may take (MEDMMV_MAX_IMAGE_DECODED_BYTES). */
  maxDecodedBytes?: number;
  /** The case asks about cells: regions at a finer level are sent besides the overview. */
  regions: boolean;
  pictures?: PictureBudget;
}

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
  const metadata: Array<{ uid: string; meta: QidoItem }> = [];
  for (const i of wsi) metadata.push({ uid: i.uid, meta: await instanceMetadata(series, i.uid) });
  const ids = { study: series.ref.study, series: series.url.split("/").pop()! };
  return pyramidPictures(imageId, metadata, ids, dicomwebTiles(series), caption, o);
}

/** Reads the tiles of a level as RGB (tileWidth × tileHeight × 3 each), in the order given. */
export type TileSource = (level: WsiLevel, tiles: readonly WsiTile[]) => Promise<{ rgb: Buffer[]; transferSyntaxUid: string }>;

/**
 * The pictures of a slide, whatever holds its tiles (a PACS, or one instance sent whole): the
 * overview is the finest level that fits the model's long side, assembled from its tiles;
 * when the case asks about cells, a few of the overview's most tissue-rich areas are read at
 * a finer level as well (wsi-regions.ts). Each picture's provenance gives its level, spacing
 * and region.
 */
export async function pyramidPictures(imageId: string, metadata: Array<{ uid: string; meta: QidoItem }>, ids: { study?: string; series?: string }, source: TileSource, caption: string | undefined, o: WholeSlideOptions): Promise<LoadedImage[]> {
  let levels: WsiLevel[];
  try {
    levels = pyramidLevels(metadata);
  } catch (e) {
    if (e instanceof WsiShapeError) throw refuse("INVALID_INPUT", imageId, e.message);
    throw e;
  }
  if (levels.length === 0) throw refuse("NOT_FOUND", imageId, "the slide has no pyramid level (only label, overview or thumbnail images)");
  for (const l of levels) {
    if (l.bitsAllocated !== 8 || (l.samplesPerPixel !== 1 && l.samplesPerPixel !== 3)) throw refuse("UNSUPPORTED_MEDIA", imageId, `level ${l.index} has ${l.samplesPerPixel} samples of ${l.bitsAllocated} bits; whole-slide tiles are read as 8-bit grey or colour`);
  }
  const optics = wsiOptics(metadata.map((m) => m.meta));
  const ov = overviewLevel(levels, o.longSide > 0 ? o.longSide : 2048);
  if (ov.width * ov.height > o.maxPixels) throw refuse("PAYLOAD_TOO_LARGE", imageId, `its coarsest level is ${ov.width}×${ov.height}, over ${o.maxPixels} pixels; the slide has no level small enough to read whole`);
  if (o.maxDecodedBytes !== undefined && ov.width * ov.height * 3 > o.maxDecodedBytes) throw refuse("PAYLOAD_TOO_LARGE", imageId, `its coarsest level of ${ov.width}×${ov.height} decodes to ${ov.width * ov.height * 3} bytes, over ${o.maxDecodedBytes}; send the slide's pyramid (e.g. from a PACS over DICOMweb)`);
  reservePictures(o.pictures, 1, imageId);

  const whole = { x: 0, y: 0, width: ov.width, height: ov.height };
  const overview = await assemble(imageId, source, ov, whole);
  // The overview is sent at most at the model's long side (the coarsest level may be larger).
  const fit = o.longSide > 0 ? Math.min(1, o.longSide / Math.max(ov.width, ov.height)) : 1;
  const shown = { width: Math.max(1, Math.round(ov.width * fit)), height: Math.max(1, Math.round(ov.height * fit)) };
  const common = { levels: levels.length, overviewId: imageId, overviewWidth: shown.width, overviewHeight: shown.height, ...iccAndOptics(optics) };
  const out: LoadedImage[] = [
    await picture(imageId, overview.rgb, ov.width, ov.height, shown, overview.transferSyntaxUid, ids, ov, [caption, `whole-slide microscopy (SM), overview: level ${ov.index} of ${levels.length} (0 = full resolution), ${ov.width}×${ov.height} pixels${spacingText(ov)}`], {
      role: "overview", level: ov.index, totalColumns: ov.width, totalRows: ov.height, ...spacing(ov), region: whole, overviewRegion: { x: 0, y: 0, ...shown }, tiles: overview.tiles, levelFrames: ov.frames, ...common,
    }),
  ];
  if (!o.regions) return out;

  // The region level: at most REGION_ZOOM times finer than the overview's; a slide of one level is zoomed within it.
  const finer = levels.filter((l) => l.width > shown.width * 1.5);
  const zoomed = finer.find((l) => l.width <= shown.width * REGION_ZOOM * 1.01) ?? finer[finer.length - 1];
  const room = Math.min(MAX_REGIONS, o.pictures?.left ?? MAX_REGIONS);
  if (!zoomed || room < 1) return out;
  const zoom = zoomed.width / ov.width;
  const cells = tissueRichCells(overview.rgb, ov.width, ov.height, REGION_SIDE / zoom, room);
  reservePictures(o.pictures, cells.length, imageId);
  for (const [k, cell] of cells.entries()) {
    const x = Math.min(Math.round(cell.x * zoom), zoomed.width - 1);
    const y = Math.min(Math.round(cell.y * zoom), zoomed.height - 1);
    const region = { x, y, width: Math.min(REGION_SIDE, zoomed.width - x), height: Math.min(REGION_SIDE, zoomed.height - y) };
    const read = await assemble(imageId, source, zoomed, region);
    const overviewRegion = scaleRect(region, shown.width / zoomed.width, shown.height / zoomed.height);
    const id = `${imageId}-region${k + 1}`;
    const zoomText = (zoomed.width / shown.width).toFixed(1);
    out.push(
      await picture(id, read.rgb, region.width, region.height, { width: region.width, height: region.height }, read.transferSyntaxUid, ids, zoomed, [caption, `whole-slide microscopy (SM), region ${k + 1} of ${cells.length} at level ${zoomed.index} (${zoomText}× the overview${spacingText(zoomed)}): x ${region.x}, y ${region.y}, ${region.width}×${region.height} of the level's ${zoomed.width}×${zoomed.height}; on the overview "${imageId}" at x ${overviewRegion.x}, y ${overviewRegion.y}, ${overviewRegion.width}×${overviewRegion.height}`], {
        role: "region", level: zoomed.index, totalColumns: zoomed.width, totalRows: zoomed.height, ...spacing(zoomed), region, overviewRegion, tiles: read.tiles, levelFrames: zoomed.frames,
        selection: `rank ${k + 1} of the overview's ${Math.round(REGION_SIDE / zoom)}-pixel grid cells by tissue (mean darkness ${cell.score.toFixed(3)})`, ...common,
      }),
    );
  }
  return out;
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
async function picture(id: string, rgb: Buffer, width: number, height: number, shown: { width: number; height: number }, transferSyntaxUid: string, ids: { study?: string; series?: string }, level: WsiLevel, describe: Array<string | undefined>, wsi: WsiProvenance): Promise<LoadedImage> {
  let img = sharp(rgb, { raw: { width, height, channels: 3 } });
  if (shown.width !== width || shown.height !== height) img = img.resize(shown.width, shown.height, { fit: "fill" });
  const png = await img.png().toBuffer();
  return dicomPicture(id, png, shown.width, shown.height, describe, { sopInstanceUid: level.instances[0]!, ...(ids.series ? { seriesInstanceUid: ids.series } : {}), ...(ids.study ? { studyInstanceUid: ids.study } : {}), modality: "SM", transferSyntaxUid, frame: 1, frames: 1, wsi });
}

/** Frames asked for in one request: a multipart answer of that many stays well under the byte cap. */
function framesPerRequest(series: DicomwebSeries, level: WsiLevel): number {
  const raw = level.tileWidth * level.tileHeight * level.samplesPerPixel;
  return Math.max(1, Math.min(64, Math.floor(series.options.maxBytes / (raw * 1.1 + 1024))));
}

/**
 * Tiles from a PACS by WADO-RS frame retrieval, several frames of an instance per request,
 * as stored (JPEG tiles stay JPEG on the wire, decoded here after their SOF is checked); a
 * frame in a codec this reader does not run on tiles (JPEG 2000, …) is asked for again
 * uncompressed, which the server transcodes.
 */
function dicomwebTiles(series: DicomwebSeries): TileSource {
  return async (level, tiles) => {
    const rgb: Buffer[] = new Array(tiles.length);
    let allJpeg = true;
    const perInstance = new Map<string, number[]>();
    for (const [k, t] of tiles.entries()) perInstance.set(t.instance, [...(perInstance.get(t.instance) ?? []), k]);
    const batch = framesPerRequest(series, level);
    for (const [uid, indexes] of perInstance) {
      for (let k = 0; k < indexes.length; k += batch) {
        const chunk = indexes.slice(k, k + batch);
        const stored = await instanceFrames(series, uid, chunk.map((j) => tiles[j]!.frame), true);
        const decoded = await Promise.all(stored.map((b) => tileRgb(series.imageId, b, level)));
        const missing = chunk.filter((_, j) => decoded[j] === null);
        const plain = missing.length ? await instanceFrames(series, uid, missing.map((j) => tiles[j]!.frame), false) : [];
        for (const [j, at] of chunk.entries()) {
          let tile = decoded[j] ?? null;
          if (tile === null) tile = await tileRgb(series.imageId, plain[missing.indexOf(at)]!, level);
          if (tile === null) throw refuse("UNSUPPORTED_MEDIA", series.imageId, `frame ${tiles[at]!.frame} of a level-${level.index} instance is neither JPEG nor ${level.tileWidth}×${level.tileHeight} uncompressed pixels, even when asked uncompressed`);
          if (tile.kind !== "jpeg") allJpeg = false;
          rgb[at] = tile.rgb;
        }
      }
    }
    return { rgb, transferSyntaxUid: allJpeg ? JPEG_BASELINE : EXPLICIT_LE };
  };
}

/**
 * The rectangle `r` of a level's total pixel matrix as RGB, from the tiles that meet it only.
 * Areas no tile covers (a sparse level) are white, as bare glass is.
 */
async function assemble(imageId: string, source: TileSource, level: WsiLevel, r: PixelRect): Promise<{ rgb: Buffer; tiles: number; transferSyntaxUid: string }> {
  if (level.tileWidth * level.tileHeight > MAX_TILE_PIXELS) throw refuse("PAYLOAD_TOO_LARGE", imageId, `level ${level.index}'s tiles are ${level.tileWidth}×${level.tileHeight}, over ${MAX_TILE_PIXELS} pixels each`);
  const tiles = tilesIn(level, r);
  if (tiles.length > MAX_TILES_PER_PICTURE) throw refuse("PAYLOAD_TOO_LARGE", imageId, `a picture of level ${level.index} would need ${tiles.length} tiles of ${level.tileWidth}×${level.tileHeight} (at most ${MAX_TILES_PER_PICTURE} are read for one picture)`);
  const canvas = Buffer.alloc(r.width * r.height * 3, 255);
  const read = await source(level, tiles);
  for (const [k, t] of tiles.entries()) paste(canvas, r, read.rgb[k]!, t, level);
  return { rgb: canvas, tiles: tiles.length, transferSyntaxUid: read.transferSyntaxUid };
}

/**
 * One tile as RGB (tileWidth × tileHeight × 3), or null when it is neither JPEG nor plain 8-bit
 * pixels. A JPEG's own frame header must declare the tile's size before it is decoded (a tile
 * claiming 60000² would otherwise reach the codec), and libvips is held to that many pixels.
 */
async function tileRgb(imageId: string, bytes: Buffer, level: WsiLevel): Promise<{ rgb: Buffer; kind: "jpeg" | "raw" } | null> {
  const { tileWidth: w, tileHeight: h } = level;
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    const declared = declaredCodestreamSize(bytes);
    if (!declared || declared.width !== w || declared.height !== h) {
      throw refuse("INVALID_INPUT", imageId, `a level-${level.index} tile's JPEG declares ${declared?.width ?? "?"}×${declared?.height ?? "?"} where the header says ${w}×${h}; refused before decoding`);
    }
    try {
      const { data, info } = await sharp(bytes, { limitInputPixels: w * h, failOn: "error" }).removeAlpha().toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
      return { rgb: info.channels === 3 ? data : toRgb(data, info.channels, w * h), kind: "jpeg" };
    } catch (e) {
      throw refuse("INVALID_INPUT", imageId, `a level-${level.index} tile cannot be decoded (${(e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 200)})`);
    }
  }
  const need = w * h * level.samplesPerPixel;
  // An uncompressed frame (an odd length is padded by one byte).
  if (bytes.length === need || bytes.length === need + 1) return { rgb: level.samplesPerPixel === 3 ? bytes.subarray(0, need) : toRgb(bytes, 1, w * h), kind: "raw" };
  return null;
}

function toRgb(data: Buffer, channels: number, pixels: number): Buffer {
  const out = Buffer.alloc(pixels * 3);
  for (let p = 0; p < pixels; p++) {
    const v = data[p * channels]!;
    out[p * 3] = v;
    out[p * 3 + 1] = channels >= 3 ? data[p * channels + 1]! : v;
    out[p * 3 + 2] = channels >= 3 ? data[p * channels + 2]! : v;
  }
  return out;
}

/** Copy the part of `tile` that falls inside `r` onto the canvas of `r`. */
function paste(canvas: Buffer, r: PixelRect, tile: Buffer, t: WsiTile, level: WsiLevel): void {
  const x0 = Math.max(r.x, t.x);
  const x1 = Math.min(r.x + r.width, t.x + level.tileWidth, level.width);
  const y0 = Math.max(r.y, t.y);
  const y1 = Math.min(r.y + r.height, t.y + level.tileHeight, level.height);
  if (x1 <= x0) return;
  for (let y = y0; y < y1; y++) {
    const from = ((y - t.y) * level.tileWidth + (x0 - t.x)) * 3;
    tile.copy(canvas, ((y - r.y) * r.width + (x0 - r.x)) * 3, from, from + (x1 - x0) * 3);
  }
}
