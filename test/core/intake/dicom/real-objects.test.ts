/**
 * Real public DICOM material (test/fixtures/dicom-scanners, sources, commits and licences in
 * its README; make-real-fixtures.sh made the derived ones with DCMTK, GDCM and vips): an
 * ALOKA ultrasound's segmented palette in both byte orders, a mammogram whose icon GDCM
 * compressed, an H&E tile wrapped by img2dcm, pydicom's 16- and 32-bit colour and big endian
 * objects, dcmqi's segmentation, and the Modality LUT Sequence under a codec. Each is
 * rendered through the pipeline and compared with an independent reading (pydicom and numpy,
 * DCMTK's dcmj2pnm, or the picture the object was made from), per channel for colour.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MedmmvError } from "../../../../src/core/contracts/errors.js";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { correlation, dcmtkGrey, debianTool, ourPixels, perChannel, secondOpinionMissing, standardReading } from "./second-opinion.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false, maxDicomFrames: 16 } as const;
const FIXTURES = path.join(import.meta.dirname, "../../../fixtures/dicom-scanners");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name));
const render = (name: string, file: Buffer = fixture(name)) => prepareImages({ id: name.replace(/\.dcm$/, ""), data: file.toString("base64") }, OPTS);

async function refusal(p: Promise<unknown>): Promise<MedmmvError> {
  const e = await p.then(() => null, (err: unknown) => err);
  expect(e).toBeInstanceOf(MedmmvError);
  return e as MedmmvError;
}

/** Every channel within the bar: r ≥ 0.98 and a mean difference ≤ 5. */
function expectSameColour(ours: ArrayLike<number>, theirs: ArrayLike<number>, what: string, r = 0.98, meanDiff = 5): void {
  const stats = perChannel(ours, theirs);
  for (const s of stats) {
    expect(s.r, `${what} ${JSON.stringify(stats)}`).toBeGreaterThanOrEqual(r);
    expect(s.meanDiff, `${what} ${JSON.stringify(stats)}`).toBeLessThanOrEqual(meanDiff);
  }
}

describe("an H&E tile wrapped by img2dcm (a real tile, JPEG without APP14)", () => {
  it("img2dcm's own labelling (YBR_FULL_422 over an RGB stream with component ids R,G,B) and the same stream relabelled RGB with ids 1,2,3 both come out as the tile: every channel r ≥ 0.98, mean difference ≤ 5", async () => {
    const tile = await sharp(path.join(FIXTURES, "he-tile.png")).removeAlpha().raw().toBuffer();
    for (const name of ["he-img2dcm.dcm", "he-img2dcm-rgb.dcm"]) {
      const [img] = await render(name);
      expect([img!.width, img!.height]).toEqual([228, 172]);
      expectSameColour(await ourPixels(img!.data, 3), tile, name);
    }
  });
});

describe("colour objects Debian's pydicom 2.3 cannot decode, against pydicom 3's own reference values (tests/pixels/pixels_reference.py @ fb1f24e)", () => {
  /** The rendered pixel at row y, column x. */
  async function pixelsOf(name: string): Promise<(y: number, x: number) => number[]> {
    const [img] = await render(name);
    const { data, info } = await sharp(Buffer.from(img!.data, "base64")).raw().toBuffer({ resolveWithObject: true });
    return (y, x) => Array.from(data.subarray((y * info.width + x) * info.channels, (y * info.width + x) * info.channels + 3));
  }

  it("JPEG-LS near-lossless RGB, line and sample interleaved", async () => {
    for (const name of ["SC_rgb_jls_lossy_line.dcm", "SC_rgb_jls_lossy_sample.dcm"]) {
      const at = await pixelsOf(name);
      expect([0, 10, 20, 30, 40, 50, 60, 70, 80, 90].map((y) => at(y, 0)), name).toEqual([[255, 0, 0], [255, 130, 130], [0, 255, 0], [130, 255, 130], [0, 0, 255], [130, 130, 255], [0, 0, 0], [65, 65, 65], [190, 190, 190], [255, 255, 255]]);
    }
  });

  it("plane-interleaved JPEG-LS colour (ILV 0, lossless and near-lossless; written without a preamble) is read plane by plane, as the line- and sample-interleaved copies are", async () => {
    const lossless = await pixelsOf("JLSL_RGB_ILV0.dcm");
    expect([124, 125, 126, 127].map((y) => lossless(y, 40))).toEqual([[115, 109, 91], [109, 105, 100], [100, 111, 94], [192, 53, 172]]);
    const near = await pixelsOf("JLSN_RGB_ILV0.dcm");
    expect([124, 125, 126, 127].map((y) => near(y, 40))).toEqual([[118, 110, 92], [110, 103, 99], [97, 113, 96], [191, 55, 175]]);
  });

  it("GDCM's JPEG 2000 YBR_RCT with a JP2 header, and GDCM's lossless JPEG RGB", async () => {
    const gbr = await pixelsOf("GDCMJ2K_TextGBR.dcm");
    expect([gbr(45, 140), gbr(46, 140), gbr(350, 195)]).toEqual([[223, 32, 32], [255, 0, 0], [128, 128, 128]]);
    const rgb = await pixelsOf("SC_rgb_jpeg_gdcm.dcm");
    expect([5, 15, 25, 35, 45, 55, 65, 75, 85, 95].map((y) => rgb(y, 50))).toEqual([[255, 0, 0], [255, 128, 128], [0, 255, 0], [128, 255, 128], [0, 0, 255], [128, 128, 255], [0, 0, 0], [64, 64, 64], [192, 192, 192], [255, 255, 255]]);
  });
});

describe("DICOM written without the Part 10 preamble", () => {
  it("pydicom-data's OT-PAL-8-face (a palette image, its dataset from the first byte, no file meta) renders as DCMTK's dcmj2pnm renders it", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-bare-"));
    try {
      const [img] = await render("OT-PAL-8-face.dcm");
      expect(img!.dicom!.transferSyntaxUid).toBe("1.2.840.10008.1.2");
      const src = path.join(dir, "face.dcm");
      const out = path.join(dir, "face.ppm");
      await writeFile(src, fixture("OT-PAL-8-face.dcm"));
      await promisify(execFile)("dcmj2pnm", ["--write-raw-pnm", src, out]);
      const ppm = await readFile(out);
      const theirs = ppm.subarray(ppm.length - 640 * 480 * 3);
      expect(await ourPixels(img!.data, 3)).toEqual(Array.from(theirs));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("bytes that merely start like a DICOM element are not taken for DICOM", async () => {
    const junk = Buffer.alloc(64, 0xab);
    junk.writeUInt16LE(0x0008, 0);
    const e = await refusal(render("junk", junk));
    expect(e.code).toBe("UNSUPPORTED_MEDIA");
    expect(e.message).toMatch(/not a supported format/);
  });
});

describe("objects that must be refused, refused for what they are", () => {
  it("dcmqi's segmentation (a real 1-bit SEG) is refused as a segmentation", async () => {
    const e = await refusal(render("dcmqi-seg.dcm"));
    expect(e.code).toBe("UNSUPPORTED_MEDIA");
    expect(e.message).toContain("1-bit segmentation (SEG)");
  });

  it("highdicom's FRACTIONAL (8-bit) and LABELMAP segmentations are refused as segmentations too, not rendered as grey pictures", async () => {
    for (const [name, kind] of [["highdicom-seg-fractional.dcm", "fractional"], ["highdicom-seg-labelmap.dcm", "labelmap"]] as const) {
      const e = await refusal(render(name));
      expect(e.code).toBe("UNSUPPORTED_MEDIA");
      expect(e.message).toContain(`a ${kind} segmentation (SEG) is not rendered`);
    }
  });

  it("a SEG in a transfer syntax we do not read (Deflated Image Frame Compression, pydicom-data's liver_deflate) is still refused as a segmentation, not for its syntax", async () => {
    const e = await refusal(render("liver_deflate.dcm"));
    expect(e.code).toBe("UNSUPPORTED_MEDIA");
    expect(e.message).toContain("1-bit segmentation (SEG)");
    expect(e.message).not.toMatch(/transfer syntax/);
  });
});

/**
 * `file` (explicit VR little endian, with an IconImageSequence) with its icon copied into the
 * private (0009,1110) GEIIS sequence as GE writes it, after a PACS that did not know the tag
 * stored it as UN of undefined length: the item in implicit VR, its pixel data encapsulated.
 */
function privateUnIcon(file: Buffer): Buffer {
  const LONG = new Set(["OB", "OW", "SQ", "UN", "UT", "OF"]);
  const at = file.indexOf(Buffer.concat([Buffer.from([0x88, 0x00, 0x00, 0x02]), Buffer.from("SQ")]));
  let p = at + 12 + 8; // the sequence header, then the item header
  const item: Buffer[] = [];
  const tag = (g: number, e: number, len: number) => {
    const b = Buffer.alloc(8);
    b.writeUInt16LE(g, 0);
    b.writeUInt16LE(e, 2);
    b.writeUInt32LE(len, 4);
    return b;
  };
  for (;;) {
    const g = file.readUInt16LE(p);
    const e = file.readUInt16LE(p + 2);
    if (g === 0xfffe && e === 0xe00d) break;
    const vr = file.toString("latin1", p + 4, p + 6);
    const len = LONG.has(vr) ? file.readUInt32LE(p + 8) : file.readUInt16LE(p + 6);
    const value = p + (LONG.has(vr) ? 12 : 8);
    if (len === 0xffffffff) {
      let q = value;
      for (;;) {
        const fe = file.readUInt16LE(q + 2);
        const fl = file.readUInt32LE(q + 4);
        q += 8;
        if (fe === 0xe0dd) break;
        q += fl;
      }
      item.push(tag(g, e, len), file.subarray(value, q));
      p = q;
    } else {
      item.push(tag(g, e, len), file.subarray(value, value + len));
      p = value + len;
    }
  }
  const creator = Buffer.concat([Buffer.from([0x09, 0x00, 0x10, 0x00]), Buffer.from("LO"), Buffer.from([6, 0]), Buffer.from("GEIIS ")]);
  const un = Buffer.concat([Buffer.from([0x09, 0x00, 0x10, 0x11]), Buffer.from("UN"), Buffer.from([0, 0, 0xff, 0xff, 0xff, 0xff])]);
  const sequence = Buffer.concat([creator, un, tag(0xfffe, 0xe000, 0xffffffff), ...item, tag(0xfffe, 0xe00d, 0), tag(0xfffe, 0xe0dd, 0)]);
  // Before the first element past group 0009 (the dataset's order).
  let q = 132;
  const next = (x: number) => (LONG.has(file.toString("latin1", x + 4, x + 6)) ? x + 12 + file.readUInt32LE(x + 8) : x + 8 + file.readUInt16LE(x + 6));
  while (file.readUInt16LE(q) <= 0x0009) q = next(q);
  return Buffer.concat([file.subarray(0, q), sequence, file.subarray(q)]);
}

const missing = secondOpinionMissing();

describe.skipIf(missing !== null)("real objects against pydicom and DCMTK", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-real-objects-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("the ALOKA ultrasound's segmented palette (16-bit indices) renders as pydicom expands it; its big endian copy (DCMTK dcmconv +tb) renders the same", async () => {
    const [le] = await render("aloka-palette-segmented.dcm");
    const [ref] = await standardReading(dir, fixture("aloka-palette-segmented.dcm"), "aloka");
    const ours = await ourPixels(le!.data, 3);
    expectSameColour(ours, ref!, "aloka", 0.99, 1);
    const [be] = await render("aloka-palette-segmented-big-endian.dcm");
    expect(be!.dicom!.transferSyntaxUid).toBe("1.2.840.10008.1.2.2");
    expect(await ourPixels(be!.data, 3)).toEqual(ours);
  });

  it("a mammogram whose IconImageSequence holds a JPEG-compressed icon (written by GDCM) is accepted and renders as DCMTK's dcmj2pnm renders it", async () => {
    const [img] = await render("mg-icon-gdcm.dcm");
    expect([img!.width, img!.height]).toEqual([383, 583]);
    expect(img!.dicom!.transferSyntaxUid).toBe("1.2.840.10008.1.2.4.70");
    const theirs = await dcmtkGrey(dir, fixture("mg-icon-gdcm.dcm"), "mg-icon");
    expect(correlation(await ourPixels(img!.data, 1), theirs)).toBeGreaterThanOrEqual(0.99);
  });

  it("the same icon in a GE private sequence (0009,1110) whose VR a PACS lost (UN, undefined length, implicit VR inside): left out with a warning, the image renders as before", async () => {
    const file = privateUnIcon(fixture("mg-icon-gdcm.dcm"));
    const [img] = await render("mg-private-icon", file);
    expect(img!.dicom!.warnings).toEqual(["the private element (0009,1110), a sequence without its VR holding encapsulated (icon) pixel data, was left out before parsing"]);
    const [plain] = await render("mg-icon-gdcm.dcm");
    expect(await ourPixels(img!.data, 1)).toEqual(await ourPixels(plain!.data, 1));
  });

  it("16- and 32-bit RGB (native and RLE, pydicom's test objects) are shown as their top 8 stored bits, as pydicom reads them; so are 16-bit RGB frames from JPEG lossless, JPEG-LS (DCMTK) and JPEG 2000 (GDCM)", async () => {
    for (const name of ["SC_rgb_16bit.dcm", "SC_rgb_rle_16bit.dcm", "SC_rgb_rle_32bit.dcm"]) {
      const [img] = await render(name);
      const [ref] = await standardReading(dir, fixture(name), name.replace(/\.dcm$/, ""));
      expectSameColour(await ourPixels(img!.data, 3), ref!, name, 0.99, 1);
    }
    const [native] = await render("SC_rgb_16bit.dcm");
    const expected = await ourPixels(native!.data, 3);
    const compressed = [
      await debianTool(dir, "dcmcjpeg", ["+e1"], fixture("SC_rgb_16bit.dcm"), "rgb16-jpll"),
      await debianTool(dir, "dcmcjpls", [], fixture("SC_rgb_16bit.dcm"), "rgb16-jls"),
      fixture("SC_rgb_16bit_j2k_gdcm.dcm"),
    ];
    for (const [k, file] of compressed.entries()) {
      const [img] = await render(`rgb16-${k}`, file);
      expect(await ourPixels(img!.data, 3), img!.dicom!.transferSyntaxUid).toEqual(expected);
    }
  });

  it("big endian objects read as their little endian twins: 8-bit RGB in OW (byte-swapped words) and 32-bit RT dose", async () => {
    for (const [be, le] of [["SC_rgb_small_odd_big_endian.dcm", "SC_rgb_small_odd.dcm"], ["rtdose_expb_1frame.dcm", "rtdose_1frame.dcm"]] as const) {
      const [ours] = await render(be);
      const [twin] = await render(le);
      const channels = ours!.dicom!.window ? 1 : 3;
      expect(await ourPixels(ours!.data, channels), be).toEqual(await ourPixels(twin!.data, channels));
      expect(ours!.dicom!.window).toEqual(twin!.dicom!.window);
    }
    // pydicom 3's own reference values for it (tests/pixels/pixels_reference.py, 8-bit OW swapped
    // pairwise; Debian's pydicom 2.3 does not swap them yet, DCMTK does).
    const [odd] = await render("SC_rgb_small_odd_big_endian.dcm");
    const px = await ourPixels(odd!.data, 3);
    expect([px.slice(0, 3), px.slice(18, 21), px.slice(24, 27)]).toEqual([[166, 141, 52], [158, 158, 158], [158, 158, 158]]);
    const [dose] = await render("rtdose_expb_1frame.dcm");
    const w = dose!.dicom!.window!;
    const [ref] = await standardReading(dir, fixture("rtdose_1frame.dcm"), "rtdose", { center: w.center, width: w.width });
    expect(correlation(await ourPixels(dose!.data, 1), ref!)).toBeGreaterThanOrEqual(0.99);
  });

  it("the Modality LUT Sequence is applied to compressed greyscale frames too (JPEG lossless and RLE by DCMTK): the same picture as the uncompressed object, no warning", async () => {
    const native = fixture("modality-lut.dcm");
    const [plain] = await render("modality-lut.dcm", native);
    const [ref] = await standardReading(dir, native, "mlut-native", plain!.dicom!.window);
    const expected = await ourPixels(plain!.data, 1);
    expect(correlation(expected, ref!)).toBeGreaterThanOrEqual(0.99);
    const jpll = await debianTool(dir, "dcmcjpeg", ["+e1"], native, "mlut-jpll");
    const rle = await debianTool(dir, "dcmcrle", [], native, "mlut-rle");
    for (const [syntax, file] of [["1.2.840.10008.1.2.4.70", jpll], ["1.2.840.10008.1.2.5", rle]] as const) {
      const [img] = await render(`mlut-${syntax}`, file);
      expect(img!.dicom!.transferSyntaxUid).toBe(syntax);
      expect(img!.dicom!.warnings).toBeUndefined();
      expect(img!.dicom!.window).toEqual(plain!.dicom!.window);
      expect(await ourPixels(img!.data, 1)).toEqual(expected);
    }
  });
});
