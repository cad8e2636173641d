import { describe, expect, it } from "vitest";
import type { QidoItem } from "../../../../src/core/intake/dicom/dicomweb.js";
import { overviewLevel, pyramidLevels, tilesIn, wsiOptics } from "../../../../src/core/intake/dicom/wsi-levels.js";
import { asksAboutCells, tissueInFocusCells } from "../../../../src/core/intake/dicom/wsi-regions.js";

const v = (...x: unknown[]) => ({ Value: x });

/** DICOM JSON of one whole-slide instance: a total matrix, a tile size, frames and extras. */
function instance(total: [number, number], tile: [number, number], frames: number, extra: QidoItem = {}): QidoItem {
  return { "00480006": v(total[0]), "00480007": v(total[1]), "00280011": v(tile[0]), "00280010": v(tile[1]), "00280008": v(frames), "00280002": v(3), "00280100": v(8), ...extra };
}

describe("whole-slide pyramid levels from DICOM JSON metadata", () => {
  it("TILED_FULL: frames fill the tile grid in row-major order; a concatenation's later part starts at its frame offset", () => {
    // 1000 × 600 in 256² tiles: 4 across, 3 down, 12 frames, split over two instances (8 + 4).
    const full = v("TILED_FULL");
    const levels = pyramidLevels([
      { uid: "1.1", meta: instance([1000, 600], [256, 256], 8, { "00209311": full }) },
      { uid: "1.2", meta: instance([1000, 600], [256, 256], 4, { "00209311": full, "00209228": v(8) }) },
      { uid: "2.1", meta: instance([250, 150], [256, 256], 1, { "00209311": full }) },
    ]);
    expect(levels.map((l) => [l.index, l.width, l.frames, l.organisation])).toEqual([[0, 1000, 12, "TILED_FULL"], [1, 250, 1, "TILED_FULL"]]);
    const fine = levels[0]!;
    const all = tilesIn(fine, { x: 0, y: 0, width: 1000, height: 600 });
    expect(all).toHaveLength(12);
    expect(all.find((t) => t.instance === "1.1" && t.frame === 6)).toMatchObject({ x: 256, y: 256 }); // 6th frame: row 1, column 1
    expect(all.find((t) => t.instance === "1.2" && t.frame === 1)).toMatchObject({ x: 0, y: 512 }); // 9th of the level
    // A region of 50² at (780, 520) meets one tile only: the last (its edge past the matrix); one across a corner meets four.
    expect(tilesIn(fine, { x: 780, y: 520, width: 50, height: 50 })).toEqual([{ x: 768, y: 512, instance: "1.2", frame: 4 }]);
    expect(tilesIn(fine, { x: 700, y: 500, width: 100, height: 100 })).toHaveLength(4);
  });

  it("TILED_SPARSE: tiles placed by PlanePositionSlideSequence (1-based), a repeated place (another focal plane) skipped; label images left out", () => {
    const at = (c: number, r: number) => ({ "0048021A": v({ "0048021E": v(c), "0048021F": v(r) }) });
    const levels = pyramidLevels([
      { uid: "3.1", meta: instance([512, 512], [256, 256], 3, { "00209311": v("TILED_SPARSE"), "52009230": v(at(257, 257), at(1, 1), at(257, 257)), "52009229": v({ "00289110": v({ "00280030": v(0.0005, 0.0005) }) }) }) },
      { uid: "9.9", meta: instance([300, 100], [300, 100], 1, { "00080008": v("ORIGINAL", "PRIMARY", "LABEL", "NONE") }) },
    ]);
    expect(levels).toHaveLength(1);
    expect(levels[0]!.tiles).toEqual([{ x: 256, y: 256, instance: "3.1", frame: 1 }, { x: 0, y: 0, instance: "3.1", frame: 2 }]);
    expect(levels[0]!.pixelSpacingMm).toEqual([0.0005, 0.0005]);
  });

  it("the overview is the finest level within 2× the long side whose tiles fit (read and scaled down), else the finest that fits, else the coarsest; optics are read", () => {
    const levels = pyramidLevels([4000, 2000, 1000, 500].map((w, k) => ({ uid: `4.${k}`, meta: instance([w, w / 2], [256, 256], 1) })));
    // 2000 is within 2 × 1536: it keeps the detail the 1000-pixel level lost (the 1587-vs-793 case).
    expect(overviewLevel(levels, 1536).width).toBe(2000);
    expect(overviewLevel(levels, 1536, (l) => l.width < 2000).width).toBe(1000);
    expect(overviewLevel(levels, 400).width).toBe(500);
    expect(overviewLevel(levels, 200, () => false).width).toBe(500);
    const optics = wsiOptics([{ "00480105": v({ "00282000": { vr: "OB", BulkDataURI: "http://x/bulk" }, "00480106": v("1"), "00220016": v({ "00080104": v("Brightfield illumination") }) }) }]);
    expect(optics).toEqual({ iccProfile: true, opticalPaths: [{ id: "1", illumination: "Brightfield illumination" }] });
  });
});

describe("regions for questions about cells", () => {
  it("asks about cells by its words, not by any mention of a slide", () => {
    for (const q of ["Estimate the cellularity", "What proportion are blasts?", "Describe the nuclear morphology", "Any mitoses?", "atypical cells"]) expect(asksAboutCells(q), q).toBe(true);
    for (const q of ["What does the slide show overall?", "Is the architecture preserved?"]) expect(asksAboutCells(q), q).toBe(false);
  });

  it("picks tissue in focus: never bare glass, never a dark blot, and sharp tissue before blurred", () => {
    // 60 × 20 overview in 10-pixel cells: glass (white), a dark smooth blot (the old darkness
    // rule's favourite), H&E-like tissue with fine texture (in focus), and the same tissue smooth (out of focus).
    const w = 60;
    const h = 20;
    const rgb = Buffer.alloc(w * h * 3, 245);
    const set = (x: number, y: number, c: [number, number, number]) => rgb.set(c, (y * w + x) * 3);
    for (let y = 0; y < 20; y++) {
      for (let x = 0; x < 10; x++) set(x + 10, y, [25, 20, 30]); // blot: x 10–19
      for (let x = 0; x < 20; x++) set(x + 20, y, (x + y) % 2 ? [200, 110, 190] : [120, 40, 140]); // sharp tissue: x 20–39
      for (let x = 0; x < 10; x++) set(x + 40, y, [160, 75, 165]); // blurred tissue: x 40–49
    }
    const cells = tissueInFocusCells(rgb, w, h, 10, 3);
    expect(cells).toHaveLength(3);
    for (const c of cells) expect([20, 30]).toContain(c.x); // the sharp tissue's cells only
    for (const c of cells) {
      expect(c.tissue).toBe(1);
      expect(c.among).toBe(6); // the sharp and blurred cells; glass and blot are not tissue
      expect(c.focus).toBeGreaterThan(1000);
    }
    // With room for all, the blurred tissue comes last and the blot and glass never.
    const all = tissueInFocusCells(rgb, w, h, 10, 12);
    expect(all.map((c) => c.x).sort()).toEqual([20, 20, 30, 30, 40, 40]);
    expect(all.slice(4).map((c) => c.x)).toEqual([40, 40]);
  });
});
