/**
 * When a whole-slide question is about cells, the overview alone is too coarse: a few regions
 * are read at a finer level too. The rule for "about cells" and how regions are picked (tissue
 * in focus) are here (docs/imaging.md#whole-slide-images).
 */

/** Words that ask about cells rather than the architecture a slide's overview shows. */
const CELL_WORDS = /\b(cells?|cellular\w*|blasts?|morpholog\w*|nucle\w*|mitos\w*|mitotic|cytolog\w*|atypi\w*|lymphocyt\w*|myelocyt\w*|megakaryocyt\w*|erythro\w*|granul\w*)\b/i;

/** Whether a question (with the case's notes, or a pathway step) asks about cells. */
export function asksAboutCells(text: string): boolean {
  return CELL_WORDS.test(text);
}

/** Regions read at a finer level when cells are asked about (each is a picture of the case). */
export const MAX_REGIONS = 3;
/** Side of a region, in pixels of its level. */
export const REGION_SIDE = 512;
/** The region level is at most this many times finer than the overview's (a field of view a pathologist would zoom to). */
export const REGION_ZOOM = 4;

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Why a region was chosen: the measures its provenance reports. */
export interface RegionChoice extends Rect {
  /** Share of the cell's pixels that are tissue (0–1). */
  tissue: number;
  /** Squared Laplacian of the cell's luminance summed over its tissue pixels whose neighbours are tissue too, per pixel of the cell: sharp detail scores high, blur low, a rim against glass or the glass itself not at all. */
  focus: number;
  /** Tissue cells the choice was made among. */
  among: number;
  /** The saturation threshold (Otsu's, on the overview) above which a pixel counted as tissue. */
  threshold: number;
}

/** Values below this brightness (0–1) are ink, pen marks or folded debris, never the stained tissue a pathologist reads. */
const DARKEST_TISSUE = 0.2;
/** A cell is a candidate when at least this share of it is tissue. */
const MIN_TISSUE = 0.5;
/** Saturation below this is glass, whatever Otsu's threshold says (a slide that is all tissue or all glass). */
const MIN_SATURATION = 0.05;

/**
 * Where a pathologist would start on a slide's overview (`rgb`, width × height, 3 channels):
 * a tissue mask first — stained tissue is coloured, glass is white or grey, so a pixel is tissue
 * when its saturation is above Otsu's threshold of the overview's saturations (and above a
 * floor) and it is not darker than stain (ink and blots are) — then, among the grid cells of
 * `side` pixels that are mostly tissue, those in focus: the mean squared Laplacian of the
 * luminance over the cell's tissue pixels, which an out-of-focus area lacks. The `count` best,
 * best first (ties in reading order). Never background, never a dark blot.
 */
export function tissueInFocusCells(rgb: Buffer, width: number, height: number, side: number, count: number): RegionChoice[] {
  const n = width * height;
  const sat = new Float32Array(n);
  const lum = new Float32Array(n);
  const value = new Float32Array(n);
  const histogram = new Uint32Array(256);
  for (let p = 0; p < n; p++) {
    const r = rgb[p * 3]!;
    const g = rgb[p * 3 + 1]!;
    const b = rgb[p * 3 + 2]!;
    const max = Math.max(r, g, b);
    const min = Math.min(r, g, b);
    sat[p] = max === 0 ? 0 : (max - min) / max;
    value[p] = max / 255;
    lum[p] = 0.299 * r + 0.587 * g + 0.114 * b;
    histogram[Math.min(255, Math.round(sat[p]! * 255))]!++;
  }
  const threshold = Math.max(MIN_SATURATION, otsu(histogram, n) / 255);
  const tissue = new Uint8Array(n);
  for (let p = 0; p < n; p++) tissue[p] = sat[p]! > threshold && value[p]! >= DARKEST_TISSUE ? 1 : 0;

  const solid = closeMask(tissue, width, height, GAP_RADIUS);

  const s = Math.max(1, Math.floor(side));
  // Whole cells only (a partial one at the right or bottom edge is not scored), unless the overview is smaller than one.
  const across = Math.max(1, Math.floor(width / s));
  const down = Math.max(1, Math.floor(height / s));
  const candidates: Array<Omit<RegionChoice, "among" | "threshold">> = [];
  for (let gy = 0; gy < down; gy++) {
    for (let gx = 0; gx < across; gx++) {
      const x0 = gx * s;
      const y0 = gy * s;
      const w = Math.min(s, width - x0);
      const h = Math.min(s, height - y0);
      let inTissue = 0;
      let energy = 0;
      let measured = 0;
      for (let y = y0; y < y0 + h; y++) {
        for (let x = x0; x < x0 + w; x++) {
          const p = y * width + x;
          if (!tissue[p]) continue;
          inTissue++;
          if (x === 0 || y === 0 || x === width - 1 || y === height - 1) continue;
          // Focus is measured inside tissue only: where tissue meets glass (a core's rim, the
          // edge of a blot) the step in brightness is sharp however blurred the tissue is, and
          // on a tissue-microarray slide it ranked an out-of-focus blot's rim first. Pale gaps
          // between cells are not glass: the mask is closed first (`solid`), so the edges of
          // nuclei next to them still count.
          if (!solid[p - 1] || !solid[p + 1] || !solid[p - width] || !solid[p + width]) continue;
          const lap = lum[p - 1]! + lum[p + 1]! + lum[p - width]! + lum[p + width]! - 4 * lum[p]!;
          energy += lap * lap;
          measured++;
        }
      }
      const share = inTissue / (w * h);
      // Over the whole cell, glass and rims counting zero: of two cells with equally sharp
      // tissue, the one the tissue fills ranks first (a field a pathologist would read whole).
      if (share >= MIN_TISSUE) candidates.push({ x: x0, y: y0, width: w, height: h, tissue: share, focus: measured ? energy / (w * h) : 0 });
    }
  }
  return candidates
    .sort((a, b) => b.focus - a.focus || a.y - b.y || a.x - b.x)
    .slice(0, count)
    .map((c) => ({ ...c, among: candidates.length, threshold }));
}

/** Gaps in the tissue mask up to twice this many pixels wide (pale cytoplasm, lumina between nuclei) are closed before focus is measured. */
const GAP_RADIUS = 2;

/** A binary mask closed (dilated, then eroded) by a square of side 2r + 1, separably: small gaps filled, glass left as it was. */
function closeMask(mask: Uint8Array, width: number, height: number, r: number): Uint8Array {
  const pass = (src: Uint8Array, dilate: boolean): Uint8Array => {
    const tmp = new Uint8Array(src.length);
    const out = new Uint8Array(src.length);
    const want = dilate ? 1 : 0;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        let v = dilate ? 0 : 1;
        for (let d = Math.max(0, x - r); d <= Math.min(width - 1, x + r) && v !== want; d++) if (src[y * width + d] === want) v = want;
        tmp[y * width + x] = v;
      }
    }
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        let v = dilate ? 0 : 1;
        for (let d = Math.max(0, y - r); d <= Math.min(height - 1, y + r) && v !== want; d++) if (tmp[d * width + x] === want) v = want;
        out[y * width + x] = v;
      }
    }
    return out;
  };
  return pass(pass(mask, true), false);
}

/** Otsu's threshold of a 256-bin histogram of `total` values: the bin that best splits it in two. */
function otsu(histogram: Uint32Array, total: number): number {
  let sum = 0;
  for (let i = 0; i < 256; i++) sum += i * histogram[i]!;
  let sumB = 0;
  let weightB = 0;
  let best = 0;
  let bestBetween = -1;
  for (let t = 0; t < 256; t++) {
    weightB += histogram[t]!;
    if (weightB === 0) continue;
    const weightF = total - weightB;
    if (weightF === 0) break;
    sumB += t * histogram[t]!;
    const meanB = sumB / weightB;
    const meanF = (sum - sumB) / weightF;
    const between = weightB * weightF * (meanB - meanF) ** 2;
    if (between > bestBetween) {
      bestBetween = between;
      best = t;
    }
  }
  return best;
}
