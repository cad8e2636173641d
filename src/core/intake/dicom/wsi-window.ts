/**
 * One VOI window for a whole greyscale slide of more than 8 bits a sample (fluorescence
 * scanners write 16-bit channels). Tiles are read as their stored values and windowed once per
 * slide, never tile by tile: a window per tile would give each tile its own contrast and draw
 * the tile grid onto the picture (a slide whose tiles each hold one value would come out flat).
 */
export interface SlideWindow {
  /** Stored values drawn black and white (linear between; MONOCHROME1 inverted). */
  low: number;
  high: number;
  /** The same window as DICOM centre and width, for provenance. */
  center: number;
  width: number;
  source: string;
}

/** Share of the overview's pixels allowed below the window and above it: a few saturated or dead pixels do not set the range. */
const TAIL = 0.005;

/**
 * The slide's window: its own WindowCenter/WindowWidth when the series carries one (PS3.3
 * C.11.2.1.2, linear: centre − 0.5 ± (width − 1) / 2), else the 0.5th to 99.5th percentile of
 * the overview's values — the single-frame reader's "the frame's value range", made robust to
 * the hot pixels a fluorescence camera has.
 */
export function slideWindow(overview: Uint16Array, own: { center: number; width: number } | null): SlideWindow {
  if (own && own.width >= 1) {
    const half = (own.width - 1) / 2;
    return { low: own.center - 0.5 - half, high: own.center - 0.5 + half, center: own.center, width: own.width, source: "object (the series' WindowCenter/WindowWidth)" };
  }
  const histogram = new Uint32Array(65536);
  for (let i = 0; i < overview.length; i++) histogram[overview[i]!]! += 1;
  const tail = Math.floor(overview.length * TAIL);
  const low = valueAtRank(histogram, tail);
  const high = valueAtRank(histogram, Math.max(0, overview.length - 1 - tail));
  // Centre and width as PS3.3's linear function reads them, so that they reproduce this mapping.
  return { low, high, center: (low + high) / 2 + 0.5, width: high - low + 1, source: `the overview's value range (${TAIL * 100}th to ${100 - TAIL * 100}th percentile of its stored values), one window for every picture of the slide` };
}

/** The smallest value with more than `rank` values below or at it. */
function valueAtRank(histogram: Uint32Array, rank: number): number {
  let seen = 0;
  for (let v = 0; v < histogram.length; v++) {
    seen += histogram[v]!;
    if (seen > rank) return v;
  }
  return histogram.length - 1;
}

/**
 * Stored values windowed to 8-bit grey, spread to RGB (the picture's canvas form): below the
 * window black, above it white; a window of one value draws that value black and those above
 * white (a slide of one value is black, as the single-frame reader draws an empty frame).
 */
export function windowToRgb(values: Uint16Array, w: SlideWindow, monochrome1: boolean): Buffer {
  const out = Buffer.allocUnsafeSlow(values.length * 3);
  const span = w.high - w.low;
  const lut = new Uint8Array(65536);
  for (let v = 0; v < 65536; v++) {
    const g = span <= 0 ? (v > w.high ? 255 : 0) : Math.round(Math.min(1, Math.max(0, (v - w.low) / span)) * 255);
    lut[v] = monochrome1 ? 255 - g : g;
  }
  for (let i = 0, o = 0; i < values.length; i++, o += 3) {
    const g = lut[values[i]!]!;
    out[o] = g;
    out[o + 1] = g;
    out[o + 2] = g;
  }
  return out;
}
