import { tagValue, type QidoItem } from "./dicomweb.js";

/**
 * The pyramid of a VL Whole Slide Microscopy series, read from its instances' DICOM JSON
 * metadata (never their pixel data): one level per total pixel matrix size (a level split
 * over several instances, a concatenation, is one level), and where each tile of a level is.
 */
export interface WsiTile {
  /** Top-left corner in the level's total pixel matrix, 0-based. */
  x: number;
  y: number;
  instance: string;
  /** 1-based frame number within its instance (WADO-RS `/frames/{n}`). */
  frame: number;
}

export interface WsiLevel {
  /** 0 = the finest (full resolution); the coarsest has the highest index. */
  index: number;
  /** TotalPixelMatrixColumns × TotalPixelMatrixRows. */
  width: number;
  height: number;
  /** Columns × Rows of one tile (frame). */
  tileWidth: number;
  tileHeight: number;
  samplesPerPixel: number;
  bitsAllocated: number;
  /** PhotometricInterpretation of the tiles (needed to decode a compressed one). */
  photometric: string;
  /** PixelSpacing (row spacing, column spacing) in mm, from the shared functional groups. */
  pixelSpacingMm?: [number, number];
  /** Frames the level holds, all instances together. */
  frames: number;
  tiles: WsiTile[];
  instances: string[];
  organisation: "TILED_FULL" | "TILED_SPARSE";
}

/** What the series says about its optics (recorded in provenance, never sent to a model). */
export interface WsiOptics {
  /** Whether an ICC profile is present (ICCProfile in OpticalPathSequence). */
  iccProfile: boolean;
  opticalPaths: Array<{ id?: string; description?: string; illumination?: string }>;
}

type Json = QidoItem[string];

function item(v: Json, k = 0): QidoItem | undefined {
  const x = v?.Value?.[k];
  return typeof x === "object" && x !== null ? (x as QidoItem) : undefined;
}

function num(v: QidoItem | undefined, tag: string): number | undefined {
  if (!v) return undefined;
  const x = tagValue(v, tag);
  const n = typeof x === "string" ? Number(x) : x;
  return typeof n === "number" && Number.isFinite(n) ? n : undefined;
}

function str(v: QidoItem | undefined, tag: string): string | undefined {
  if (!v) return undefined;
  const x = tagValue(v, tag);
  return typeof x === "string" ? x.slice(0, 200) : undefined;
}

/** Image types that are not part of the pyramid (PS3.3 C.8.12.4.1.1, value 3). */
const NOT_PYRAMID = new Set(["LABEL", "OVERVIEW", "THUMBNAIL"]);

/** Frames per level past which a level is refused unread (a slide's full level of 100k tiles is not a picture). */
export const MAX_LEVEL_FRAMES = 250_000;

export class WsiShapeError extends Error {}

/**
 * The pyramid levels of a series from its instances' metadata, finest first. Tiles are placed
 * by PlanePositionSlideSequence (ColumnPositionInTotalImagePixelMatrix / RowPosition…, 1-based)
 * when the frames carry it (TILED_SPARSE, and what OrthancWSIDicomizer writes); otherwise, as
 * TILED_FULL says, frames fill the tile grid in row-major order (ConcatenationFrameOffsetNumber
 * added for the later parts of a concatenation). Only the first focal plane and optical path
 * are read: a frame whose place is already taken is skipped.
 */
export function pyramidLevels(metadata: Array<{ uid: string; meta: QidoItem }>): WsiLevel[] {
  const bySize = new Map<string, WsiLevel>();
  for (const { uid, meta } of metadata) {
    const imageType = (meta["00080008"]?.Value ?? []).map(String);
    if (imageType.length >= 3 && NOT_PYRAMID.has(imageType[2]!.toUpperCase())) continue;
    const width = num(meta, "00480006");
    const height = num(meta, "00480007");
    const tileWidth = num(meta, "00280011");
    const tileHeight = num(meta, "00280010");
    const frames = num(meta, "00280008") ?? 1;
    if (!width || !height || !tileWidth || !tileHeight || width < 1 || height < 1 || tileWidth < 1 || tileHeight < 1) {
      throw new WsiShapeError("a whole-slide instance lacks TotalPixelMatrixColumns/Rows or Columns/Rows");
    }
    if (frames < 1 || frames > MAX_LEVEL_FRAMES) throw new WsiShapeError(`a whole-slide instance declares ${frames} frames (at most ${MAX_LEVEL_FRAMES} are read)`);
    const key = `${width}x${height}`;
    let level = bySize.get(key);
    if (!level) {
      const shared = item(meta["52009229"]);
      const spacing = item(shared?.["00289110"])?.["00280030"]?.Value?.map(Number);
      level = {
        index: 0, width, height, tileWidth, tileHeight,
        samplesPerPixel: num(meta, "00280002") ?? 1,
        bitsAllocated: num(meta, "00280100") ?? 8,
        photometric: str(meta, "00280004") ?? ((num(meta, "00280002") ?? 1) === 1 ? "MONOCHROME2" : "RGB"),
        ...(spacing?.length === 2 && spacing.every((n) => Number.isFinite(n) && n > 0) ? { pixelSpacingMm: [spacing[0]!, spacing[1]!] as [number, number] } : {}),
        frames: 0, tiles: [], instances: [],
        organisation: str(meta, "00209311") === "TILED_FULL" ? "TILED_FULL" : "TILED_SPARSE",
      };
      bySize.set(key, level);
    }
    if (level.tileWidth !== tileWidth || level.tileHeight !== tileHeight) throw new WsiShapeError("instances of one pyramid level have different tile sizes");
    level.frames += frames;
    level.instances.push(uid);
    placeTiles(level, uid, meta, frames);
  }
  const levels = [...bySize.values()].sort((a, b) => b.width * b.height - a.width * a.height);
  levels.forEach((l, k) => (l.index = k));
  return levels;
}

function placeTiles(level: WsiLevel, uid: string, meta: QidoItem, frames: number): void {
  const taken = new Set(level.tiles.map((t) => `${t.x},${t.y}`));
  const perFrame = meta["52009230"]?.Value;
  const across = Math.ceil(level.width / level.tileWidth);
  const down = Math.ceil(level.height / level.tileHeight);
  const offset = num(meta, "00209228") ?? 0;
  for (let k = 0; k < frames; k++) {
    let x: number;
    let y: number;
    const group = Array.isArray(perFrame) ? perFrame[k] : undefined;
    const position = typeof group === "object" && group !== null ? item((group as QidoItem)["0048021A"]) : undefined;
    const column = num(position, "0048021E");
    const row = num(position, "0048021F");
    if (column !== undefined && row !== undefined) {
      x = column - 1;
      y = row - 1;
    } else {
      const n = offset + k;
      if (n >= across * down) continue; // a later focal plane or optical path
      x = (n % across) * level.tileWidth;
      y = Math.floor(n / across) * level.tileHeight;
    }
    // Outside the matrix, or off the tile grid: not a tile this reader can place.
    if (x < 0 || y < 0 || x >= level.width || y >= level.height) continue;
    const key = `${x},${y}`;
    if (taken.has(key)) continue;
    taken.add(key);
    level.tiles.push({ x, y, instance: uid, frame: k + 1 });
  }
}

/** ICC profile and optical paths of the series (the first instance that has an OpticalPathSequence). */
export function wsiOptics(metadata: QidoItem[]): WsiOptics {
  const paths = metadata.map((m) => m["00480105"]?.Value).find((v) => Array.isArray(v) && v.length > 0) ?? [];
  const items = paths.filter((p): p is QidoItem => typeof p === "object" && p !== null).slice(0, 8);
  return {
    iccProfile: items.some((p) => p["00282000"] !== undefined),
    opticalPaths: items.map((p) => {
      const id = str(p, "00480106");
      const description = str(p, "00480107");
      const illumination = str(item(p["00220016"]), "00080104");
      return { ...(id ? { id } : {}), ...(description ? { description } : {}), ...(illumination ? { illumination } : {}) };
    }),
  };
}

/**
 * The level read for the overview: the finest whose total pixel matrix fits `longSide` on its
 * long side (so nothing finer than the model reads is fetched); when none fits, the coarsest.
 */
export function overviewLevel(levels: readonly WsiLevel[], longSide: number): WsiLevel {
  return levels.find((l) => Math.max(l.width, l.height) <= longSide) ?? levels[levels.length - 1]!;
}

/** Tiles of `level` that meet the rectangle (x, y, w, h) of its total pixel matrix. */
export function tilesIn(level: WsiLevel, r: { x: number; y: number; width: number; height: number }): WsiTile[] {
  return level.tiles.filter((t) => t.x < r.x + r.width && t.x + level.tileWidth > r.x && t.y < r.y + r.height && t.y + level.tileHeight > r.y);
}
