import { tagValue, type QidoItem } from "./dicomweb.js";
import { coordinate, NO_POSITION, type FramePositions } from "./wsi-metadata.js";

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
  /** Tiles placed by their frames' positions (TILED_SPARSE, or frames that carry a position). */
  tiles: WsiTile[];
  /**
   * TILED_FULL instances, whose frames fill the tile grid row-major from `first` (0-based, the
   * concatenation's frame offset): their tiles are computed for the cells a picture needs,
   * never listed (a level may declare hundreds of thousands of frames).
   */
  grid: Array<{ instance: string; first: number; frames: number }>;
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
export function pyramidLevels(metadata: ReadonlyArray<{ uid: string; meta: QidoItem; positions?: FramePositions }>): WsiLevel[] {
  const bySize = new Map<string, WsiLevel>();
  // The grid cells each level's tiles already hold: one set per level for all its instances,
  // so placing is linear in the frames however many instances a level is split over.
  const taken = new Map<WsiLevel, Set<number>>();
  for (const { uid, meta, positions } of metadata) {
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
    if (!Number.isInteger(frames) || frames < 1 || frames > MAX_LEVEL_FRAMES) throw new WsiShapeError(`a whole-slide instance declares ${frames} frames (at most ${MAX_LEVEL_FRAMES} are read)`);
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
        frames: 0, tiles: [], grid: [], instances: [],
        organisation: str(meta, "00209311") === "TILED_FULL" ? "TILED_FULL" : "TILED_SPARSE",
      };
      bySize.set(key, level);
      taken.set(level, new Set());
    }
    if (level.tileWidth !== tileWidth || level.tileHeight !== tileHeight) throw new WsiShapeError("instances of one pyramid level have different tile sizes");
    level.frames += frames;
    // A level split over many instances counts all their frames: the cap is the level's, not an instance's.
    if (level.frames > MAX_LEVEL_FRAMES) throw new WsiShapeError(`a pyramid level of ${width}×${height} declares more than ${MAX_LEVEL_FRAMES} frames over its instances`);
    level.instances.push(uid);
    placeTiles(level, uid, meta, frames, positions ?? positionsOf(meta), taken.get(level)!);
  }
  const levels = [...bySize.values()].sort((a, b) => b.width * b.height - a.width * a.height);
  levels.forEach((l, k) => (l.index = k));
  return levels;
}

/**
 * Each frame of an instance at its place on the level's tile grid. A position off the grid
 * (tiles that would overlap their neighbours) or outside the total pixel matrix is refused:
 * a PACS that places tiles so is not describing a pyramid, and reading it would decode far
 * more than the picture holds. A place already taken (another focal plane or optical path)
 * keeps its first tile. Frames without positions fill the grid in row-major order (TILED_FULL)
 * and are not listed here: tilesIn computes them. Linear in the frames.
 */
function placeTiles(level: WsiLevel, uid: string, meta: QidoItem, frames: number, positions: FramePositions | undefined, taken: Set<number>): void {
  const across = Math.ceil(level.width / level.tileWidth);
  const offset = num(meta, "00209228") ?? 0;
  const positionOf = (k: number) => {
    if (!positions || k * 2 + 1 >= positions.length) return null;
    const column = positions[k * 2]!;
    const row = positions[k * 2 + 1]!;
    return column !== NO_POSITION && row !== NO_POSITION ? { column, row } : null;
  };
  if (positionOf(0) === null) {
    level.grid.push({ instance: uid, first: offset, frames });
    return;
  }
  for (let k = 0; k < frames; k++) {
    const p = positionOf(k);
    if (p === null) throw new WsiShapeError(`frame ${k + 1} of a level-${level.width}×${level.height} instance has no position where its others have one`);
    const x = p.column - 1;
    const y = p.row - 1;
    if (x < 0 || y < 0 || x >= level.width || y >= level.height) throw new WsiShapeError(`frame ${k + 1} of a level-${level.width}×${level.height} instance is placed at (${p.column}, ${p.row}), outside its total pixel matrix`);
    if (x % level.tileWidth !== 0 || y % level.tileHeight !== 0) throw new WsiShapeError(`frame ${k + 1} of a level-${level.width}×${level.height} instance is placed at (${p.column}, ${p.row}), off its ${level.tileWidth}×${level.tileHeight} tile grid (its tiles would overlap)`);
    const cell = (y / level.tileHeight) * across + x / level.tileWidth;
    if (taken.has(cell)) continue;
    taken.add(cell);
    level.tiles.push({ x, y, instance: uid, frame: k + 1 });
  }
}

/**
 * The frame positions of a dataset in DICOM JSON form (an instance sent whole, or a test's
 * metadata): its Per-frame Functional Groups' PlanePositionSlideSequence, as
 * WsiMetadataReader keeps them from a PACS's answer.
 */
export function positionsOf(meta: QidoItem): FramePositions | undefined {
  const perFrame = meta["52009230"]?.Value;
  if (!Array.isArray(perFrame) || perFrame.length === 0) return undefined;
  const n = Math.min(perFrame.length, MAX_LEVEL_FRAMES);
  const out = new Int32Array(n * 2).fill(NO_POSITION);
  for (let k = 0; k < n; k++) {
    const group = perFrame[k];
    const position = typeof group === "object" && group !== null ? item((group as QidoItem)["0048021A"]) : undefined;
    const column = num(position, "0048021E");
    const row = num(position, "0048021F");
    if (column !== undefined && row !== undefined) {
      out[k * 2] = coordinate(column);
      out[k * 2 + 1] = coordinate(row);
    }
  }
  return out;
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

/** How much larger than the model's long side a level may be and still be read for the overview (then scaled down). */
export const OVERVIEW_OVERSIZE = 2;

/**
 * The level read for the overview: the finest whose long side is within OVERVIEW_OVERSIZE × the
 * model's and that `fits` (its tiles within the picture's limits) — read and scaled down, it
 * keeps detail a coarser level lost (a 1587-pixel level beats a 793-pixel one for a 1536 model);
 * when none does, the finest that fits `longSide` itself, else the coarsest.
 */
export function overviewLevel(levels: readonly WsiLevel[], longSide: number, fits: (l: WsiLevel) => boolean = () => true): WsiLevel {
  return levels.find((l) => Math.max(l.width, l.height) <= longSide * OVERVIEW_OVERSIZE && fits(l)) ?? levels.find((l) => Math.max(l.width, l.height) <= longSide) ?? levels[levels.length - 1]!;
}

/** Grid cells of `level` that the rectangle meets: how many tiles at most a picture of it needs (computed, not listed). */
export function cellsIn(level: WsiLevel, r: { x: number; y: number; width: number; height: number }): number {
  const across = Math.ceil(Math.min(r.x + r.width, level.width) / level.tileWidth) - Math.floor(Math.max(0, r.x) / level.tileWidth);
  const down = Math.ceil(Math.min(r.y + r.height, level.height) / level.tileHeight) - Math.floor(Math.max(0, r.y) / level.tileHeight);
  return Math.max(0, across) * Math.max(0, down);
}

/**
 * Tiles of `level` that meet the rectangle (x, y, w, h) of its total pixel matrix: placed tiles
 * first, then the TILED_FULL instances' frames for the cells still empty (the first instance
 * holding a cell wins). Work in the cells of the rectangle (call cellsIn first to bound it).
 */
export function tilesIn(level: WsiLevel, r: { x: number; y: number; width: number; height: number }): WsiTile[] {
  const placed = level.tiles.filter((t) => t.x < r.x + r.width && t.x + level.tileWidth > r.x && t.y < r.y + r.height && t.y + level.tileHeight > r.y);
  if (level.grid.length === 0) return placed;
  const across = Math.ceil(level.width / level.tileWidth);
  const held = new Set(placed.map((t) => `${t.x},${t.y}`));
  const out = [...placed];
  const cx0 = Math.floor(Math.max(0, r.x) / level.tileWidth);
  const cx1 = Math.ceil(Math.min(r.x + r.width, level.width) / level.tileWidth);
  const cy0 = Math.floor(Math.max(0, r.y) / level.tileHeight);
  const cy1 = Math.ceil(Math.min(r.y + r.height, level.height) / level.tileHeight);
  for (let cy = cy0; cy < cy1; cy++) {
    for (let cx = cx0; cx < cx1; cx++) {
      const x = cx * level.tileWidth;
      const y = cy * level.tileHeight;
      if (held.has(`${x},${y}`)) continue;
      const n = cy * across + cx;
      const part = level.grid.find((g) => n >= g.first && n < g.first + g.frames);
      if (part) out.push({ x, y, instance: part.instance, frame: n - part.first + 1 });
    }
  }
  return out;
}
