/**
 * When a whole-slide question is about cells, the overview alone is too coarse: a few regions
 * are read at a finer level too. The rule for "about cells" and how regions are picked are
 * here (docs/imaging.md#whole-slide-images).
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

/**
 * The most tissue-rich cells of a grid laid over the overview (`rgb`, width × height, 3
 * channels): each cell is `side` overview pixels square, scored by the mean darkness
 * (255 − luminance) of its pixels, since stained tissue is darker than the bright glass
 * around it (whole cells only: a partial one at the right or bottom edge is left out). The `count` best cells with any tissue are chosen, best first (ties in reading
 * order), as rectangles of the overview.
 */
export function tissueRichCells(rgb: Buffer, width: number, height: number, side: number, count: number): Array<Rect & { score: number }> {
  const s = Math.max(1, Math.floor(side));
  const cells: Array<Rect & { score: number }> = [];
  // Whole cells only (a partial one at the right or bottom edge is not scored), unless the overview is smaller than one.
  const across = Math.max(1, Math.floor(width / s));
  const down = Math.max(1, Math.floor(height / s));
  for (let gy = 0; gy < down; gy++) {
    for (let gx = 0; gx < across; gx++) {
      const x0 = gx * s;
      const y0 = gy * s;
      const w = Math.min(s, width - x0);
      const h = Math.min(s, height - y0);
      let dark = 0;
      for (let y = y0; y < y0 + h; y++) {
        for (let x = x0; x < x0 + w; x++) {
          const i = (y * width + x) * 3;
          dark += 255 - (0.299 * rgb[i]! + 0.587 * rgb[i + 1]! + 0.114 * rgb[i + 2]!);
        }
      }
      cells.push({ x: x0, y: y0, width: w, height: h, score: dark / (w * h) / 255 });
    }
  }
  return cells
    .filter((c) => c.score > 0.02)
    .sort((a, b) => b.score - a.score || a.y - b.y || a.x - b.x)
    .slice(0, count);
}
