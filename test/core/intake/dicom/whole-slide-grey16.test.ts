/**
 * 16-bit greyscale whole-slide images, as fluorescence scanners write them: highdicom's own
 * test slides (ImagingDataCommons/highdicom, MIT; see test/fixtures/dicom-scanners/README.md),
 * 25 tiles of 10×10 stored values in TILED_FULL order, one value per tile, rising (and in the
 * reversed slide falling) tile by tile. Each is read as a slide — sent whole, JPEG-LS
 * compressed by DCMTK, and from a PACS (Orthanc) over DICOMweb — and compared with pydicom's
 * reading of the same frames under the window the provenance names. A window per tile (what
 * the 8-bit path's renderer would do) draws every tile of one value black: the gradient is
 * the test.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LoadedImage } from "../../../../src/core/contracts/clinical-case.js";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { orthancMissing, startOrthanc, type OrthancServer } from "../../../support/orthanc.js";
import { correlation, debianTool, ourPixels, pydicomFrames, secondOpinionMissing } from "./second-opinion.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false, maxDicomFrames: 16 } as const;
const FIXTURES = path.join(import.meta.dirname, "../../../fixtures/dicom-scanners");
const SLIDES = ["highdicom-sm-grayscale.dcm", "highdicom-sm-grayscale-reversed.dcm"] as const;
const TILE = 10;
const GRID = 5;
const SIDE = TILE * GRID;
const missing = secondOpinionMissing();

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-grey16-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** pydicom's frames under `window` (its output spans the 16 stored bits: brought to 8), placed as TILED_FULL places them (row by row of tiles). */
async function pydicomSlide(file: Buffer, name: string, window: { center: number; width: number }): Promise<number[]> {
  const frames = await pydicomFrames(dir, file, name, window);
  expect(frames).toHaveLength(GRID * GRID);
  const out = new Array<number>(SIDE * SIDE);
  frames.forEach((f, k) => {
    const [tx, ty] = [(k % GRID) * TILE, Math.floor(k / GRID) * TILE];
    for (let y = 0; y < TILE; y++) for (let x = 0; x < TILE; x++) out[(ty + y) * SIDE + tx + x] = Math.round((f[y * TILE + x]! * 255) / 65535);
  });
  return out;
}

/** Our overview matches pydicom's reading of the same frames under the window our provenance names. */
async function expectAsPydicom(img: LoadedImage, file: Buffer, name: string): Promise<void> {
  expect([img.width, img.height]).toEqual([SIDE, SIDE]);
  const window = img.dicom!.window!;
  expect(window.source).toMatch(/overview's value range/);
  const theirs = await pydicomSlide(file, name, window);
  const ours = await ourPixels(img.data, 1);
  expect(correlation(ours, theirs)).toBeGreaterThan(0.999);
  expect(Math.max(...ours.map((v, i) => Math.abs(v - theirs[i]!)))).toBeLessThanOrEqual(1);
  // The slide's range is used, not each tile's: 25 distinct greys from black to white.
  expect(new Set(ours).size).toBe(25);
  expect(Math.min(...ours)).toBe(0);
  expect(Math.max(...ours)).toBe(255);
}

describe.skipIf(missing)("a 16-bit greyscale slide (highdicom's fluorescence-style test slides)", () => {
  it("sent whole (uncompressed) is read as a slide under one window for all its tiles, as pydicom reads its frames", async () => {
    for (const name of SLIDES) {
      const file = readFileSync(path.join(FIXTURES, name));
      const [img, ...more] = await prepareImages({ id: "slide", data: file.toString("base64") }, OPTS);
      expect(more).toHaveLength(0);
      expect(img!.dicom!.modality).toBe("SM");
      expect(img!.dicom!.wsi?.role).toBe("overview");
      expect(img!.dicom!.window).toMatchObject({ center: 12.5, width: 25 });
      await expectAsPydicom(img!, file, name);
    }
  });

  it("JPEG-LS lossless (DCMTK dcmcjpls) decodes each tile's 16-bit values through the decode pool, as uncompressed", async () => {
    const file = readFileSync(path.join(FIXTURES, SLIDES[0]));
    const jls = await debianTool(dir, "dcmcjpls", [], file, "grey16-jls");
    const [img] = await prepareImages({ id: "slide", data: jls.toString("base64") }, OPTS);
    expect(img!.dicom!.transferSyntaxUid).toBe("1.2.840.10008.1.2.4.80");
    await expectAsPydicom(img!, file, "grey16-jls");
  });

  it("the series' own WindowCenter/WindowWidth is used when it has one, and named", async () => {
    const file = readFileSync(path.join(FIXTURES, SLIDES[0]));
    const at = path.join(dir, "grey16-w.dcm");
    writeFileSync(at, file);
    execFileSync("dcmodify", ["-nb", "-i", "(0028,1050)=8", "-i", "(0028,1051)=9", at]);
    const own = readFileSync(at);
    const [img] = await prepareImages({ id: "slide", data: own.toString("base64") }, OPTS);
    expect(img!.dicom!.window).toMatchObject({ center: 8, width: 9, source: expect.stringMatching(/series' WindowCenter/) });
    const theirs = await pydicomSlide(own, "grey16-w-ref", { center: 8, width: 9 });
    const ours = await ourPixels(img!.data, 1);
    expect(Math.max(...ours.map((v, i) => Math.abs(v - theirs[i]!)))).toBeLessThanOrEqual(1);
  });
});

describe.skipIf(missing || orthancMissing())("a 16-bit greyscale slide from a PACS (Orthanc, DICOMweb)", () => {
  let orthanc: OrthancServer;
  beforeAll(async () => {
    orthanc = await startOrthanc();
    await orthanc.store(readFileSync(path.join(FIXTURES, SLIDES[0])));
  }, 90_000);
  afterAll(async () => {
    await orthanc?.close();
  });

  it("its frames, fetched uncompressed by WADO-RS, are read as 16-bit values and windowed once, as pydicom reads them", async () => {
    const file = readFileSync(path.join(FIXTURES, SLIDES[0]));
    const at = path.join(dir, "uids.dcm");
    writeFileSync(at, file);
    const uid = (tag: string) => execFileSync("dcmdump", ["+P", tag, at], { encoding: "utf8" }).match(/\[([^\]]+)\]/)![1]!;
    const ref = { server: orthanc.dicomweb, study: uid("0020,000d"), series: uid("0020,000e") };
    const [img] = await prepareImages({ id: "slide", dicomweb: ref }, { ...OPTS, dicomweb: { servers: [orthanc.dicomweb], attempts: 1, maxInstances: 16, timeoutMs: 20_000 } });
    expect(img!.dicom!.wsi?.tiles).toBe(25);
    expect(img!.dicom!.transferSyntaxUid).toBe("1.2.840.10008.1.2.1");
    await expectAsPydicom(img!, file, "grey16-pacs");
  });
});
