import sharp from "sharp";
import { describe, expect, it } from "vitest";
import type { QidoItem } from "../../../../src/core/intake/dicom/dicomweb.js";
import { pyramidPictures, type TileSource } from "../../../../src/core/intake/dicom/whole-slide.js";
import type { WsiLevel, WsiTile } from "../../../../src/core/intake/dicom/wsi-levels.js";
import type { ParsedDicom, RenderItem } from "../../../../src/core/intake/dicom/dicom-worker.js";
import { slideFromInstance } from "../../../../src/core/intake/dicom/whole-slide-instance.js";

const v = (...x: unknown[]) => ({ Value: x });

/** A TILED_FULL level of `w` × `h` in `tile`² tiles. */
function level(uid: string, w: number, h: number, tile: number): { uid: string; meta: QidoItem } {
  const frames = Math.ceil(w / tile) * Math.ceil(h / tile);
  return { uid, meta: { "00480006": v(w), "00480007": v(h), "00280011": v(tile), "00280010": v(tile), "00280008": v(frames), "00280002": v(3), "00280100": v(8), "00209311": v("TILED_FULL") } };
}

/** The slide's colour at (x, y) of a level `scale` times coarser than 1024 wide: a pattern any misplaced tile breaks. */
function colour(x: number, y: number, scale: number): [number, number, number] {
  const X = x * scale;
  const Y = y * scale;
  const dark = X > 600 ? 80 : 0; // stained tissue: darker right of x 600
  return [150 + ((X * 7 + Y * 3) % 50) - dark, 150 + (Y % 40) - dark, 220 - dark];
}

/** Tiles cut from the pattern (beyond the matrix: black, which must never show), noting each one asked for. */
function patternTiles(asked: WsiTile[]): TileSource {
  return async (l: WsiLevel, tiles, sink) => {
    asked.push(...tiles);
    const scale = 1024 / l.width;
    for (const [k, t] of tiles.entries()) {
      sink.reserve(l.tileWidth * l.tileHeight * 3);
      const b = Buffer.alloc(l.tileWidth * l.tileHeight * 3);
      for (let y = 0; y < l.tileHeight; y++) for (let x = 0; x < l.tileWidth; x++) {
        if (t.x + x < l.width && t.y + y < l.height) b.set(colour(t.x + x, t.y + y, scale), (y * l.tileWidth + x) * 3);
      }
      sink.put(k, b, 3);
    }
    return { transferSyntaxUid: "1.2.840.10008.1.2.1" };
  };
}

async function pixels(data: string): Promise<{ data: Buffer; width: number; height: number }> {
  const { data: raw, info } = await sharp(Buffer.from(data, "base64")).raw().toBuffer({ resolveWithObject: true });
  return { data: raw, width: info.width, height: info.height };
}

describe("whole-slide pictures from a tile source", () => {
  const slide = [level("1.1", 1024, 600, 128), level("1.2", 256, 150, 128)];

  it("assembles the overview from TILED_FULL tiles exactly, edge tiles cropped, and only its level's tiles are read", async () => {
    const asked: WsiTile[] = [];
    const [overview] = await pyramidPictures("s", slide, {}, patternTiles(asked), undefined, { longSide: 300, maxPixels: 1e7, regions: false });
    const got = await pixels(overview!.data);
    expect([got.width, got.height]).toEqual([256, 150]);
    for (let y = 0; y < 150; y++) for (let x = 0; x < 256; x++) expect([...got.data.subarray((y * 256 + x) * 3, (y * 256 + x) * 3 + 3)]).toEqual(colour(x, y, 4));
    expect(asked.map((t) => `${t.instance}/${t.frame}`)).toEqual(["1.2/1", "1.2/2", "1.2/3", "1.2/4"]);
    expect(overview!.dicom!.wsi).toMatchObject({ role: "overview", level: 1, levels: 2, tiles: 4, levelFrames: 4 });
  });

  it("regions come from the finer level where the overview has stained tissue, reserved from the picture budget, each exactly what the level holds", async () => {
    const asked: WsiTile[] = [];
    const pictures = { left: 3, max: 16 };
    const out = await pyramidPictures("s", slide, {}, patternTiles(asked), undefined, { longSide: 300, maxPixels: 1e7, regions: true, pictures });
    // The grid's whole cells are the overview's two 128² squares; only the right one (mostly
    // right of x 600) is stained enough to be tissue by the overview's own Otsu threshold.
    expect(out.map((p) => p.id)).toEqual(["s", "s-region1"]);
    expect(pictures.left).toBe(1);
    expect(out.slice(1).map((p) => p.dicom!.wsi!.region)).toEqual([{ x: 512, y: 0, width: 512, height: 512 }]);
    expect(out[1]!.dicom!.wsi!.selection).toMatch(/^rank 1 by focus of the overview's 1 128-pixel grid cells that are mostly tissue: \d+ % tissue \(saturation above Otsu's/);
    for (const p of out.slice(1)) {
      const { region, overviewRegion } = p.dicom!.wsi!;
      expect(overviewRegion).toEqual({ x: region.x / 4, y: region.y / 4, width: region.width / 4, height: region.height / 4 });
      const got = await pixels(p.data);
      for (const [x, y] of [[0, 0], [region.width - 1, region.height - 1], [37, 11]] as const) {
        expect([...got.data.subarray((y * got.width + x) * 3, (y * got.width + x) * 3 + 3)]).toEqual(colour(region.x + x, region.y + y, 1));
      }
    }
  });

  it("refuses tiles too small to be worth thousands of requests, before reading any", async () => {
    const asked: WsiTile[] = [];
    const tiny = [level("2.1", 512, 512, 8)];
    await expect(pyramidPictures("s", tiny, {}, patternTiles(asked), undefined, { longSide: 1536, maxPixels: 1e7, regions: false })).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(asked).toHaveLength(0);
  });

  it("the decoded-bytes budget counts what a picture holds (its canvas and a tile in flight), not all its tiles at once", async () => {
    // 1024² of 128² tiles: 64 tiles of 49,152 bytes (3.1 MB together) and a 3.1 MB canvas. A
    // budget of 4 MB holds the canvas and a tile: read, every tile pasted as it came.
    const asked: WsiTile[] = [];
    const one = [level("3.1", 1024, 1024, 128)];
    const [overview] = await pyramidPictures("s", one, {}, patternTiles(asked), undefined, { longSide: 1024, maxPixels: 1e7, maxDecodedBytes: 4_000_000, regions: false });
    expect(asked).toHaveLength(64);
    const got = await pixels(overview!.data);
    for (const [x, y] of [[0, 0], [1023, 1023], [517, 300]] as const) expect([...got.data.subarray((y * 1024 + x) * 3, (y * 1024 + x) * 3 + 3)]).toEqual(colour(x, y, 1));
    // A budget under the canvas itself is still refused before any tile is read.
    const none: WsiTile[] = [];
    await expect(pyramidPictures("s", one, {}, patternTiles(none), undefined, { longSide: 1024, maxPixels: 1e7, maxDecodedBytes: 3_000_000, regions: false })).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(none).toHaveLength(0);
  });

  it("a source that would hold more decoded tiles at once than the budget leaves is stopped (413) before that fetch", async () => {
    const one = [level("3.2", 1024, 1024, 128)];
    let fetched = 0;
    // A source that asks to hold all 64 of its tiles decoded at once.
    const greedy: TileSource = async (l, tiles, sink) => {
      sink.reserve(tiles.length * l.tileWidth * l.tileHeight * 3);
      fetched += tiles.length;
      return { transferSyntaxUid: "1.2.840.10008.1.2.1" };
    };
    await expect(pyramidPictures("s", one, {}, greedy, undefined, { longSide: 1024, maxPixels: 1e7, maxDecodedBytes: 4_000_000, regions: false })).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(fetched).toBe(0);
  });

  it("an instance sent alone has its tiles decoded one at a time, each pasted before the next is asked for", async () => {
    // The decoding thread as the reader sees it (the codecs are not the subject here): a
    // 1024 × 600 TILED_FULL level of 128² tiles, each frame rendered as RGBA from the pattern.
    const calls: RenderItem[][] = [];
    const across = 8;
    const dicom: ParsedDicom = {
      header: {
        elements: { SOPInstanceUID: "2.25.5", Columns: 128, Rows: 128, TotalPixelMatrixColumns: 1024, TotalPixelMatrixRows: 600, NumberOfFrames: 40, SamplesPerPixel: 3, BitsAllocated: 8, DimensionOrganizationType: "TILED_FULL", ImageType: ["DERIVED", "PRIMARY", "VOLUME"] },
        hasPixelData: true, floatPixelData: null, pixelBytes: 0, transferSyntaxUid: "1.2.840.10008.1.2.4.90", frameWindows: null, frameContents: null, warnings: [],
      },
      async render(items) {
        calls.push(items);
        return items.map(({ frame }) => {
          const rgba = new Uint8Array(128 * 128 * 4);
          const x0 = (frame % across) * 128;
          const y0 = Math.floor(frame / across) * 128;
          for (let y = 0; y < 128; y++) for (let x = 0; x < 128; x++) rgba.set([...colour(x0 + x, y0 + y, 1), 255], (y * 128 + x) * 4);
          return { width: 128, height: 128, pixels: rgba.buffer, window: null };
        });
      },
    };
    const [overview] = await slideFromInstance("s", dicom, undefined, { maxPixels: 1e7, maxDecodedBytes: 4_000_000, modelLongSide: 1024 });
    const asked = calls.filter((c) => c.length > 0);
    expect(asked).toHaveLength(40);
    expect(asked.every((c) => c.length === 1)).toBe(true);
    const got = await pixels(overview!.data);
    for (const [x, y] of [[0, 0], [1023, 599], [700, 333]] as const) expect([...got.data.subarray((y * 1024 + x) * 3, (y * 1024 + x) * 3 + 3)]).toEqual(colour(x, y, 1));
  });

  it("a sparse level's cells no tile covers are white (glass); the tiles it has are pasted exactly", async () => {
    // 512 × 256 of 128² tiles: 8 cells, frames only for the two on the diagonal of the left half.
    const sparse = { uid: "4.1", meta: { "00480006": v(512), "00480007": v(256), "00280011": v(128), "00280010": v(128), "00280008": v(2), "00280002": v(3), "00280100": v(8), "00209311": v("TILED_SPARSE"), "52009230": v({ "0048021A": v({ "0048021E": v(1), "0048021F": v(1) }) }, { "0048021A": v({ "0048021E": v(129), "0048021F": v(129) }) }) } };
    const asked: WsiTile[] = [];
    const [overview] = await pyramidPictures("s", [sparse], {}, patternTiles(asked), undefined, { longSide: 512, maxPixels: 1e7, regions: false });
    expect(asked).toHaveLength(2);
    const got = await pixels(overview!.data);
    const at = (x: number, y: number) => [...got.data.subarray((y * 512 + x) * 3, (y * 512 + x) * 3 + 3)];
    expect(at(5, 7)).toEqual(colour(5, 7, 2));
    expect(at(200, 130)).toEqual(colour(200, 130, 2));
    for (const [x, y] of [[300, 10], [511, 255], [10, 200], [129, 0]] as const) expect(at(x, y)).toEqual([255, 255, 255]);
  });
});
