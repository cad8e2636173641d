/**
 * DICOM objects as scanners write them (test/fixtures/dicom-scanners, sources and licences in
 * its README): enhanced multi-frame CT and MR read through their functional groups, colour
 * JPEG by what its header and codestream say together (checked per channel: grey hides
 * colour), subsampled and palette colour, an icon with encapsulated pixel data, the Modality
 * LUT Sequence, and refusals that name what an object is.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MedmmvError } from "../../../../src/core/contracts/errors.js";
import { prepareCase } from "../../../../src/core/intake/case-intake.js";
import { prepareImages } from "../../../../src/core/intake/images.js";
import dcmjs from "dcmjs";
import { dicomFile, LOSSLESS, transcode } from "./dicom-fixtures.js";
import { correlation, dcmtkGrey, ourPixels, perChannel, secondOpinionMissing, standardReading } from "./second-opinion.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false, maxDicomFrames: 16 } as const;
const FIXTURES = path.join(import.meta.dirname, "../../../fixtures/dicom-scanners");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name));
const render = (name: string, file: Buffer<ArrayBufferLike> = fixture(name)) => prepareImages({ id: name.replace(/\.dcm$/, ""), data: file.toString("base64") }, OPTS);

async function refusal(p: Promise<unknown>): Promise<MedmmvError> {
  const e = await p.then(() => null, (err: unknown) => err);
  expect(e).toBeInstanceOf(MedmmvError);
  return e as MedmmvError;
}

/** A picture's RGB values, interleaved, from a PNG in the repository. */
async function pngRgb(name: string): Promise<Buffer> {
  return (await sharp(path.join(FIXTURES, name)).removeAlpha().raw().toBuffer({ resolveWithObject: true })).data;
}

describe("colour JPEG: the colour transform from the header and the codestream together", () => {
  it("JPEG labelled RGB without APP14 (a photograph, an IHC-stained tissue) is not YCbCr-converted: every channel r ≥ 0.98, mean difference ≤ 5 against the picture it was made from", async () => {
    for (const [dcm, png] of [["photo-jpeg-rgb.dcm", "chelsea.png"], ["ihc-jpeg-rgb.dcm", "ihc.png"]] as const) {
      const [img] = await render(dcm);
      const stats = perChannel(await ourPixels(img!.data, 3), await pngRgb(png));
      for (const { r, meanDiff } of stats) {
        expect(r, `${dcm} ${JSON.stringify(stats)}`).toBeGreaterThanOrEqual(0.98);
        expect(meanDiff, `${dcm} ${JSON.stringify(stats)}`).toBeLessThanOrEqual(5);
      }
    }
  });

  it("the reverse writer's error, a JFIF (YCbCr) stream labelled RGB, is still converted", async () => {
    const [img] = await render("photo-jfif-jpeg-rgb.dcm");
    for (const { r, meanDiff } of perChannel(await ourPixels(img!.data, 3), await pngRgb("chelsea.png"))) {
      expect(r).toBeGreaterThanOrEqual(0.98);
      expect(meanDiff).toBeLessThanOrEqual(5);
    }
  });

  it("JPEG 2000 labelled YBR_FULL over a stream with a component transform (the codec undoes it) is not converted twice", async () => {
    const W = 48;
    const H = 32;
    const px = new Uint8Array(W * H * 3);
    for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) px.set([x * 5, y * 7, 200 - x * 2], (y * W + x) * 3);
    // dcmjs-codecs writes it RGB with MCT 1; relabelled YBR_FULL, as writers that should say YBR_ICT/RCT do.
    const j2k = await transcode(dicomFile({ modality: "OT", rows: H, columns: W, stored: px, rgb: true }), LOSSLESS["JPEG 2000 Lossless"]);
    const dict = dcmjs.data.DicomMessage.readFile(j2k.buffer.slice(j2k.byteOffset, j2k.byteOffset + j2k.byteLength) as ArrayBuffer);
    dict.dict["00280004"]!.Value = ["YBR_FULL"];
    const [img] = await render("j2k-ybr", Buffer.from(dict.write()));
    expect(img!.dicom!.warnings?.[0]).toMatch(/labelled YBR_FULL, but its JPEG 2000 codestream applies a component transform/);
    for (const { r, meanDiff } of perChannel(await ourPixels(img!.data, 3), px)) {
      expect(r).toBeGreaterThanOrEqual(0.99);
      expect(meanDiff).toBeLessThanOrEqual(1);
    }
  });

  it("pydicom's SC_rgb_jpeg comes out the grey pydicom reads (244, 244, 244), not magenta", async () => {
    // pydicom (with Pillow) reads every pixel of it as (244, 244, 244); converting it as YCbCr gives (255, 121, 255).
    const [img] = await render("SC_rgb_jpeg.dcm");
    const px = await ourPixels(img!.data, 3);
    for (let c = 0; c < 3; c++) {
      let sum = 0;
      for (let i = c; i < px.length; i += 3) sum += px[i]!;
      expect(Math.abs(sum / (px.length / 3) - 244)).toBeLessThanOrEqual(1);
    }
  });
});

const missing = secondOpinionMissing();

describe.skipIf(missing !== null)("scanner objects against a standard reading by pydicom and numpy", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-scanner-objects-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("an Enhanced CT takes its rescale (−1024) and window from the Shared Functional Groups: every frame r ≥ 0.99 with the reference", async () => {
    const imgs = await render("enhanced-ct.dcm");
    const ref = await standardReading(dir, fixture("enhanced-ct.dcm"), "ect");
    expect(imgs).toHaveLength(2);
    for (const [k, img] of imgs.entries()) {
      expect(img.dicom!.window).toEqual({ center: 49, width: 102, source: "frame VOI LUT (functional groups)" });
      // Its Frame Content says where the frame sits: the caption carries it.
      expect(img.caption).toMatch(new RegExp(`frame ${k + 1} of 2 \\(stack \\w+, position \\d+\\)`));
      const ours = await ourPixels(img.data, 1);
      expect(correlation(ours, ref[k]!)).toBeGreaterThanOrEqual(0.99);
      expect(ours.reduce((s, x, i) => s + Math.abs(x - ref[k]![i]!), 0) / ours.length).toBeLessThanOrEqual(2);
    }
  });

  it("a window the question asks for goes on top of the functional groups' rescale (lung, in Hounsfield units)", async () => {
    const c = await prepareCase({ question: "Any lung nodule?", images: [{ id: "ect", data: fixture("enhanced-ct.dcm").toString("base64") }] }, OPTS);
    const lung = c.images.filter((i) => i.id.endsWith("-lung"));
    expect(lung).toHaveLength(2);
    const ref = await standardReading(dir, fixture("enhanced-ct.dcm"), "ect-lung", { center: -600, width: 1500 });
    for (const [k, img] of lung.entries()) expect(correlation(await ourPixels(img.data, 1), ref[k]!)).toBeGreaterThanOrEqual(0.99);
  });

  it("an Enhanced MR keeps its own window, per frame where the frames differ", async () => {
    const imgs = await render("enhanced-mr.dcm");
    expect(imgs.map((i) => [i.dicom!.window!.center, i.dicom!.window!.width])).toEqual([[300, 500], [300, 500], [150, 200]]);
    const ref = await standardReading(dir, fixture("enhanced-mr.dcm"), "emr");
    for (const [k, img] of imgs.entries()) expect(correlation(await ourPixels(img.data, 1), ref[k]!)).toBeGreaterThanOrEqual(0.99);
  });

  it("the Modality LUT Sequence is applied before the window (mlut_18; DCMTK's dcmj2pnm reads it the same)", async () => {
    const [img] = await render("modality-lut.dcm");
    const [ref] = await standardReading(dir, fixture("modality-lut.dcm"), "mlut");
    expect(correlation(await ourPixels(img!.data, 1), ref!)).toBeGreaterThanOrEqual(0.99);
  });

  it("palette colour with segmented lookup tables renders each channel as the expanded tables give", async () => {
    const [img] = await render("palette-segmented.dcm");
    const [ref] = await standardReading(dir, fixture("palette-segmented.dcm"), "palette");
    for (const { r, meanDiff } of perChannel(await ourPixels(img!.data, 3), ref!)) {
      expect(r).toBeGreaterThanOrEqual(0.99);
      expect(meanDiff).toBeLessThanOrEqual(2);
    }
  });

  it("uncompressed YBR_FULL_422 (two bytes a pixel) is accepted and converted; a JFIF YBR_FULL JPEG of the same picture agrees", async () => {
    const [ref] = await standardReading(dir, fixture("SC_ybr_full_422_uncompressed.dcm"), "ybr422");
    for (const name of ["SC_ybr_full_422_uncompressed.dcm", "SC_rgb_jpeg_dcmtk.dcm"]) {
      const [img] = await render(name);
      for (const { r, meanDiff } of perChannel(await ourPixels(img!.data, 3), ref!)) {
        expect(r, name).toBeGreaterThanOrEqual(0.98);
        expect(meanDiff, name).toBeLessThanOrEqual(5);
      }
    }
  });
});

describe.skipIf(missing !== null)("an icon with encapsulated pixel data, against DCMTK", () => {
  it("an icon image sequence with encapsulated pixel data is walked as pixel data, and the image renders as DCMTK's dcmj2pnm renders it", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-icon-"));
    try {
      const [img] = await render("icon-encapsulated.dcm");
      expect([img!.width, img!.height]).toEqual([64, 64]);
      expect(img!.dicom!.transferSyntaxUid).toBe("1.2.840.10008.1.2.4.70");
      const theirs = await dcmtkGrey(dir, fixture("icon-encapsulated.dcm"), "icon");
      const ours = await ourPixels(img!.data, 1);
      expect(correlation(ours, theirs)).toBeGreaterThanOrEqual(0.99);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("objects readers read, and refusals that name what an object is", () => {

  it("an all-zero frame is black", async () => {
    const [img] = await render("zero", dicomFile({ modality: "MR", rows: 16, columns: 16, stored: new Uint16Array(256) }));
    expect(Math.max(...(await ourPixels(img!.data, 1)))).toBe(0);
  });

  it("float pixel data is refused as such, not as an object without pixels", async () => {
    const e = await refusal(render("parametric-map-float.dcm"));
    expect(e.code).toBe("UNSUPPORTED_MEDIA");
    expect(e.message).toContain("floating-point pixel data is not rendered");
  });

  it("a complete 1-bit SEG is refused as a segmentation, not as truncated", async () => {
    const e = await refusal(render("seg-1bit.dcm"));
    expect(e.code).toBe("UNSUPPORTED_MEDIA");
    expect(e.message).toContain("1-bit segmentation (SEG)");
    expect(e.message).not.toMatch(/truncated/);
  });
});
