/**
 * A tissue-microarray slide built from real H&E tissue (StainTools' figure panels, MIT; see
 * test/fixtures/dicom-scanners/README.md): six core spots on glass — three sharp cores, one
 * core out of focus, one dark out-of-focus blot (ink or folded debris) and one empty spot —
 * written as a tiled pyramidal TIFF (libvips), dicomized by Debian's OrthancWSIDicomizer and
 * sent as one whole-slide instance with a question about cells. Every region the reader picks
 * must lie on a sharp core, as a pathologist would start: never the blur, the blot or glass.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { dicomizeTiff, dicomizerMissing } from "../../../support/orthanc.js";

const FIXTURES = path.join(import.meta.dirname, "../../../fixtures/dicom-scanners");
const W = 4608;
const H = 3072;
/** A core's radius on the slide, in pixels of its finest level (a 0.6 mm core is larger still at 0.25 µm a pixel; it must hold a region). */
const RADIUS = 700;
const CORE_W = 1880;
const CORE_H = 1410;
/** Glass: near-white with a grain. */
const GLASS = [236, 234, 240] as const;

type Spot = { x: number; y: number; kind: "sharp" | "blurred" | "blot" | "empty"; panel?: number };
const SPOTS: Spot[] = [
  { x: 768, y: 768, kind: "sharp", panel: 0 },
  { x: 2304, y: 768, kind: "sharp", panel: 2 },
  { x: 3840, y: 768, kind: "sharp", panel: 4 },
  { x: 768, y: 2304, kind: "blurred", panel: 1 },
  { x: 2304, y: 2304, kind: "blot" },
  { x: 3840, y: 2304, kind: "empty" },
];
/** Where each 240×180 panel starts in the strip. */
const PANEL_X = [0, 289, 577, 866, 1154];

/** A core's picture (its panel enlarged to 1880×1410, as wide as a core): sharp, out of focus, or a dark blot. */
async function corePixels(spot: Spot): Promise<Buffer> {
  if (spot.kind === "blot") {
    const b = Buffer.alloc(CORE_W * CORE_H * 3);
    for (let i = 0; i < CORE_W * CORE_H; i++) b.set([85, 50, 105], i * 3);
    return sharp(b, { raw: { width: CORE_W, height: CORE_H, channels: 3 } }).blur(12).raw().toBuffer();
  }
  let img = sharp(path.join(FIXTURES, "he-panels.jpg")).extract({ left: PANEL_X[spot.panel!]! + 2, top: 2, width: 236, height: 176 }).resize(CORE_W, CORE_H);
  if (spot.kind === "blurred") img = sharp(await img.png().toBuffer()).blur(20);
  return img.removeAlpha().raw().toBuffer();
}

async function tmaSlide(): Promise<Buffer> {
  const px = Buffer.alloc(W * H * 3);
  let seed = 7;
  const grain = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 7) - 3;
  for (let i = 0; i < W * H; i++) {
    const g = grain();
    px[i * 3] = GLASS[0] + g;
    px[i * 3 + 1] = GLASS[1] + g;
    px[i * 3 + 2] = GLASS[2] + g;
  }
  for (const spot of SPOTS) {
    if (spot.kind === "empty") continue;
    const core = await corePixels(spot);
    for (let dy = -RADIUS; dy < RADIUS; dy++) {
      for (let dx = -RADIUS; dx < RADIUS; dx++) {
        if (dx * dx + dy * dy >= RADIUS * RADIUS) continue;
        const src = ((dy + CORE_H / 2) * CORE_W + (dx + CORE_W / 2)) * 3;
        px.set(core.subarray(src, src + 3), ((spot.y + dy) * W + spot.x + dx) * 3);
      }
    }
  }
  return px;
}

const missing = dicomizerMissing();

describe.skipIf(missing !== null)("a tissue-microarray slide of real H&E cores, dicomized by OrthancWSIDicomizer", () => {
  let dir: string;
  let level: Buffer;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-tma-"));
    const tiff = path.join(dir, "tma.tiff");
    await sharp(await tmaSlide(), { raw: { width: W, height: H, channels: 3 } }).tiff({ tile: true, pyramid: true, tileWidth: 256, tileHeight: 256, compression: "jpeg", quality: 90 }).toFile(tiff);
    // The finest level (4608 × 3072) is the largest instance.
    level = (await dicomizeTiff(tiff)).reduce((a, b) => (b.length > a.length ? b : a));
  }, 120_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("asked about cells, every region lies on a sharp core — never the out-of-focus core, the dark blot or the empty spot — and says why it was chosen", async () => {
    const out = await prepareImages(
      { id: "tma", data: level.toString("base64"), caption: "TMA" },
      { maxBytes: 32 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false, cellRegions: true, modelLongSide: 1536, maxDecodedBytes: 400_000_000 },
    );
    const overview = out[0]!.dicom!.wsi!;
    expect(overview).toMatchObject({ role: "overview", totalColumns: W, totalRows: H, overviewWidth: 1536, overviewHeight: 1024 });
    const regions = out.slice(1);
    expect(regions).toHaveLength(3);
    const scale = 1536 / W;
    for (const r of regions) {
      const { overviewRegion, selection } = r.dicom!.wsi!;
      expect(selection).toMatch(/by focus/);
      const cx = (overviewRegion!.x + overviewRegion!.width / 2) / scale;
      const cy = (overviewRegion!.y + overviewRegion!.height / 2) / scale;
      const near = SPOTS.find((s) => (s.x - cx) ** 2 + (s.y - cy) ** 2 < RADIUS * RADIUS);
      expect(near?.kind, `region at (${cx}, ${cy}) on the slide: ${selection}`).toBe("sharp");
    }
  }, 120_000);
});
