import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { MedmmvError } from "../../../../src/core/contracts/errors.js";
import { prepareCase } from "../../../../src/core/intake/case-intake.js";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { representativeFrames } from "../../../../src/core/intake/dicom/windows.js";
import { dicomFile, expectedGrey, PHI_CANARIES, syntheticCt } from "./dicom-fixtures.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false } as const;
const b64 = (b: Buffer) => b.toString("base64");

/** The grey value of every pixel of a rendered PNG (R of RGB; the renderer writes R = G = B). */
async function greys(data: string): Promise<number[]> {
  const { data: raw, info } = await sharp(Buffer.from(data, "base64")).raw().toBuffer({ resolveWithObject: true });
  return Array.from({ length: info.width * info.height }, (_, i) => raw[i * info.channels]!);
}

async function refusal(p: Promise<unknown>): Promise<MedmmvError> {
  const e = await p.then(() => null, (err: unknown) => err);
  expect(e).toBeInstanceOf(MedmmvError);
  return e as MedmmvError;
}

describe("DICOM rendering: modality LUT, VOI window, photometric interpretation", () => {
  it("renders a CT without its own window at the documented soft-tissue window (C40/W400), pixel for pixel ±1", async () => {
    const { file, hu } = syntheticCt();
    const [img] = await prepareImages({ id: "ct", data: b64(file) }, OPTS);
    expect(img!.mimeType).toBe("image/png");
    expect(img!.dicom).toMatchObject({ sopInstanceUid: "2.25.1001", seriesInstanceUid: "2.25.10", frame: 1, frames: 1, window: { center: 40, width: 400, source: "CT soft tissue (default)" } });
    const got = await greys(img!.data);
    expect(got).toHaveLength(hu.length);
    const worst = Math.max(...got.map((g, i) => Math.abs(g - expectedGrey(hu[i]!, 40, 400))));
    expect(worst).toBeLessThanOrEqual(1);
    // The sweep spans the whole window: both ends are reached.
    expect(Math.min(...got)).toBe(0);
    expect(Math.max(...got)).toBe(255);
  });

  it("adds lung and bone renderings of a CT when the question asks about lungs or bones, each windowed as documented", async () => {
    const { file, hu } = syntheticCt();
    const c = await prepareCase({ question: "Is there a rib fracture or a lung nodule?", images: [{ id: "ct", data: b64(file) }] }, OPTS);
    expect(c.images.map((i) => [i.id, i.dicom!.window])).toEqual([
      ["ct", { center: 40, width: 400, source: "CT soft tissue (default)" }],
      ["ct-lung", { center: -600, width: 1500, source: "CT lung (asked for by the case)" }],
      ["ct-bone", { center: 400, width: 1800, source: "CT bone (asked for by the case)" }],
    ]);
    for (const img of c.images) {
      const { center, width } = img.dicom!.window!;
      const got = await greys(img.data);
      expect(Math.max(...got.map((g, i) => Math.abs(g - expectedGrey(hu[i]!, center, width))))).toBeLessThanOrEqual(1);
    }
    // A question about neither gets the one soft-tissue rendering.
    expect((await prepareCase({ question: "What is the diagnosis?", images: [{ id: "ct", data: b64(file) }] }, OPTS)).images).toHaveLength(1);
  });

  it("uses the object's own WindowCenter/Width when it has one (a lung window)", async () => {
    const { file, hu } = syntheticCt({ center: -600, width: 1500 });
    const [img] = await prepareImages({ id: "ct", data: b64(file) }, OPTS);
    expect(img!.dicom!.window).toEqual({ center: -600, width: 1500, source: "object" });
    const got = await greys(img!.data);
    expect(Math.max(...got.map((g, i) => Math.abs(g - expectedGrey(hu[i]!, -600, 1500))))).toBeLessThanOrEqual(1);
  });

  it("inverts MONOCHROME1 (a radiograph where high values are dark)", async () => {
    const values = Array.from({ length: 16 * 16 }, (_, i) => i * 16);
    const file = dicomFile({ modality: "CR", rows: 16, columns: 16, stored: new Uint16Array(values), photometric: "MONOCHROME1", window: { center: 2048, width: 4096 } });
    const [img] = await prepareImages({ id: "cr", data: b64(file) }, OPTS);
    const got = await greys(img!.data);
    expect(Math.max(...got.map((g, i) => Math.abs(g - (255 - expectedGrey(values[i]!, 2048, 4096)))))).toBeLessThanOrEqual(1);
    expect(got[0]).toBeGreaterThan(got.at(-1)!);
  });

  it("converts PALETTE COLOR through the object's lookup tables to RGB", async () => {
    // 16-bit LUT entries; pixel values 0–3 index red, green, blue and a dark grey-blue.
    const lut = (values: number[]) => new Uint16Array(256).map((_, i) => (values[i] ?? 0) * 257).buffer;
    const file = dicomFile({
      modality: "US", rows: 16, columns: 16, stored: new Uint8Array(256).map((_, i) => i % 4),
      extra: {
        PhotometricInterpretation: "PALETTE COLOR",
        RedPaletteColorLookupTableDescriptor: [256, 0, 16], GreenPaletteColorLookupTableDescriptor: [256, 0, 16], BluePaletteColorLookupTableDescriptor: [256, 0, 16],
        RedPaletteColorLookupTableData: lut([255, 0, 0, 10]), GreenPaletteColorLookupTableData: lut([0, 255, 0, 20]), BluePaletteColorLookupTableData: lut([0, 0, 255, 30]),
      },
    });
    const [img] = await prepareImages({ id: "pal", data: b64(file) }, OPTS);
    expect(img!.dicom!.window).toBeUndefined();
    const { data, info } = await sharp(Buffer.from(img!.data, "base64")).raw().toBuffer({ resolveWithObject: true });
    const px = (i: number) => Array.from(data.subarray(i * info.channels, i * info.channels + 3));
    expect([px(0), px(1), px(2), px(3)]).toEqual([[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]]);
  });

  it("scales a 16-bit MR without a window to its value range", async () => {
    const values = Array.from({ length: 16 * 16 }, (_, i) => 1000 + i * 200); // up to 51,000 of 65,535
    const file = dicomFile({ modality: "MR", rows: 16, columns: 16, stored: new Uint16Array(values) });
    const [img] = await prepareImages({ id: "mr", data: b64(file) }, OPTS);
    const got = await greys(img!.data);
    expect(img!.dicom!.window!.source).toBe("frame value range");
    expect(got[0]).toBeLessThanOrEqual(1);
    expect(got.at(-1)).toBeGreaterThanOrEqual(254);
    for (let i = 1; i < got.length; i++) expect(got[i]!).toBeGreaterThanOrEqual(got[i - 1]!);
  });
});

describe("multi-frame objects", () => {
  it("sends evenly spaced frames including the first and last, capped, each an image with its frame number", async () => {
    expect(representativeFrames(10, 4)).toEqual([0, 3, 6, 9]);
    expect(representativeFrames(3, 4)).toEqual([0, 1, 2]);
    expect(representativeFrames(9, 1)).toEqual([4]);
    const frames = 10;
    const stored = new Uint16Array(8 * 8 * frames);
    for (let f = 0; f < frames; f++) stored.fill(f * 100, f * 64, (f + 1) * 64);
    const file = dicomFile({ modality: "XA", rows: 8, columns: 8, frames, stored, window: { center: 450, width: 1000 } });
    const imgs = await prepareImages({ id: "cine", data: b64(file) }, OPTS);
    expect(imgs.map((i) => [i.id, i.dicom!.frame, i.dicom!.frames])).toEqual([
      ["cine-frame1", 1, 10],
      ["cine-frame4", 4, 10],
      ["cine-frame7", 7, 10],
      ["cine-frame10", 10, 10],
    ]);
    // Frame f holds the value 100·(f−1) everywhere: each rendering is its own frame, windowed.
    for (const [k, img] of imgs.entries()) {
      const want = expectedGrey([0, 300, 600, 900][k]!, 450, 1000);
      for (const g of await greys(img.data)) expect(Math.abs(g - want)).toBeLessThanOrEqual(1);
    }
  });
});

describe("DICOM tags never reach the case", () => {
  it("keeps only modality, body part, the study description without names or numbers, age and sex", async () => {
    const { hu } = syntheticCt();
    const stored = new Int16Array(hu.map((h) => h + 1024));
    const file = dicomFile({
      modality: "CT", rows: 32, columns: 32, stored, signed: true, slope: 1, intercept: -1024,
      extra: { ...PHI_CANARIES, PatientAge: "054Y", PatientSex: "F", BodyPartExamined: "CHEST" },
    });
    const prepared = await prepareCase({ question: "What does the CT show?", images: [{ id: "ct", data: b64(file) }] }, OPTS);
    const caption = prepared.images[0]!.caption!;
    expect(caption).toContain("CT");
    expect(caption).toContain("body part chest");
    expect(caption).toContain("study: CT chest for");
    expect(caption).toContain("54 y");
    expect(caption).toContain("sex F");
    // Everything the agents are given is the prepared case minus the provenance (UIDs, shown only in the audit view).
    const { images, ...rest } = prepared;
    const seen = JSON.stringify({ ...rest, images: images.map(({ dicom: _p, data: _d, ...img }) => img) });
    for (const [tag, value] of Object.entries(PHI_CANARIES)) {
      for (const word of value.split(/[^A-Za-z0-9]+/).filter((w) => w.length >= 4 && !/^(chest|for|history|of|lane|road|general|hospital)$/i.test(w))) {
        expect(seen, `${tag}: "${word}"`).not.toContain(word);
      }
    }
  });
});

describe("bad DICOM stays bad input", () => {
  it("refuses truncated files, unknown transfer syntaxes, absurd sizes and frame counts, and burned-in annotation", async () => {
    const { file } = syntheticCt();
    const cut = await refusal(prepareImages({ id: "cut", data: b64(file.subarray(0, 400)) }, OPTS));
    expect(cut.code).toBe("INVALID_INPUT");
    expect(cut.message).toContain('"cut"');

    const unknown = dicomFile({ modality: "CT", rows: 2, columns: 2, stored: new Int16Array(4), transferSyntax: "1.2.3.999" });
    const ts = await refusal(prepareImages({ id: "ts", data: b64(unknown) }, OPTS));
    expect(ts.code).toBe("UNSUPPORTED_MEDIA");
    expect(ts.message).toContain("1.2.3.999");

    const huge = dicomFile({ modality: "CT", rows: 2, columns: 2, stored: new Int16Array(4), extra: { Rows: 60000, Columns: 60000 } });
    const big = await refusal(prepareImages({ id: "big", data: b64(huge) }, OPTS));
    expect(big.code).toBe("PAYLOAD_TOO_LARGE");
    expect(big.message).toContain("60000×60000");

    // Four frames of 4000² (64 MB of RGBA each) pass the per-frame pixel limit but not the decoded-bytes one.
    const cine = dicomFile({ modality: "XA", rows: 2, columns: 2, stored: new Uint16Array(4), extra: { Rows: 4000, Columns: 4000, NumberOfFrames: "4" } });
    const heavy = await refusal(prepareImages({ id: "heavy", data: b64(cine) }, OPTS));
    expect(heavy.code).toBe("PAYLOAD_TOO_LARGE");
    expect(heavy.details).toMatchObject({ decodedBytes: 256_000_000 });

    const many = dicomFile({ modality: "XA", rows: 2, columns: 2, stored: new Uint16Array(4), extra: { NumberOfFrames: "1000000" } });
    expect((await refusal(prepareImages({ id: "many", data: b64(many) }, OPTS))).code).toBe("PAYLOAD_TOO_LARGE");

    const burned = dicomFile({ modality: "US", rows: 2, columns: 2, stored: new Uint16Array(4), extra: { BurnedInAnnotation: "YES" } });
    const b = await refusal(prepareImages({ id: "burned", data: b64(burned) }, OPTS));
    expect(b.code).toBe("UNPROCESSABLE");
    expect(b.message).toContain("BurnedInAnnotation");

    // Pixel data shorter than Rows × Columns × frames says is refused, not padded.
    const short = dicomFile({ modality: "CT", rows: 64, columns: 64, stored: new Int16Array(16) });
    const s = await refusal(prepareImages({ id: "short", data: b64(short) }, OPTS));
    expect(s.code).toBe("INVALID_INPUT");
    expect(s.message).toContain("truncated");
  });
});
