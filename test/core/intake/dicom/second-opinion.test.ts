import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { readFileMeta } from "../../../../src/core/intake/dicom/dataset-walk.js";
import { dicomFile, JPEG_BASELINE, syntheticCt, transcode } from "./dicom-fixtures.js";
import { correlation, debianTool, implicitUnderExplicit, ourPixels, pydicomFrames, secondOpinionMissing } from "./second-opinion.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false } as const;
const CT_WINDOW = { center: 40, width: 400 };
const W = 48;
const H = 32;

/** A 2-frame RGB object: red runs with x, green with y, blue differs by frame. */
function rgb2(): Buffer {
  const px = new Uint8Array(W * H * 3 * 2);
  for (let f = 0; f < 2; f++) for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) px.set([x * 5, y * 7, f ? 200 : 30], (f * W * H + y * W + x) * 3);
  return dicomFile({ modality: "OT", rows: H, columns: W, frames: 2, stored: px, rgb: true });
}
/** MR of 8 and of 12 bits, values sweeping both axes. */
const mr8 = () => dicomFile({ modality: "MR", rows: H, columns: W, stored: new Uint8Array(W * H).map((_, i) => (i % W) * 5 + Math.floor(i / W) * 2) });
const mr12 = () => dicomFile({ modality: "MR", rows: H, columns: W, stored: new Uint16Array(W * H).map((_, i) => (i % W) * 80 + Math.floor(i / W) * 7), extra: { BitsStored: 12, HighBit: 11 } });

const missing = secondOpinionMissing();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-second-opinion-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Every picture of `file` correlates ≥ 0.9 with pydicom's rendering of `reference` (the same object, or its lossless source). */
async function agreesWithPydicom(name: string, file: Buffer, reference: Buffer, o: { channels: 1 | 3; window?: typeof CT_WINDOW }): Promise<number[]> {
  const ours = await prepareImages({ id: name, data: file.toString("base64") }, { ...OPTS, maxDicomFrames: 16 });
  const theirs = await pydicomFrames(dir, reference, name, o.window);
  expect(ours).toHaveLength(theirs.length);
  const rs = [];
  for (const [k, img] of ours.entries()) rs.push(correlation(await ourPixels(img.data, o.channels), theirs[k]!));
  for (const r of rs) expect(r).toBeGreaterThanOrEqual(0.9);
  return rs;
}


describe.skipIf(missing !== null)("transfer syntaxes made by Debian's tools, each checked against pydicom's rendering", () => {
  it("colour RLE of two frames (dcmcrle), decoded plane by plane", async () => {
    const rle = await debianTool(dir, "dcmcrle", [], rgb2(), "rgb-rle");
    expect(readFileMeta(rle).transferSyntaxUid).toBe("1.2.840.10008.1.2.5");
    await agreesWithPydicom("rgb-rle", rle, rle, { channels: 3 });
  });

  it("implicit VR little endian (dcmconv +ti) and deflated explicit VR (dcmconv +td), windowed as pydicom windows them", async () => {
    for (const [name, args, ts] of [["implicit", ["+ti"], "1.2.840.10008.1.2"], ["deflated", ["+td"], "1.2.840.10008.1.2.1.99"]] as const) {
      const file = await debianTool(dir, "dcmconv", [...args], syntheticCt().file, name);
      expect(readFileMeta(file).transferSyntaxUid).toBe(ts);
      await agreesWithPydicom(name, file, file, { channels: 1, window: CT_WINDOW });
      const [img] = await prepareImages({ id: name, data: file.toString("base64") }, OPTS);
      expect(img!.dicom!.transferSyntaxUid).toBe(ts);
    }
  });

  it("JPEG extended, 8-bit (dcmcjpeg +ee), against pydicom's own decoding", async () => {
    const file = await debianTool(dir, "dcmcjpeg", ["+ee"], mr8(), "jpeg-ext8");
    expect(readFileMeta(file).transferSyntaxUid).toBe("1.2.840.10008.1.2.4.51");
    await agreesWithPydicom("jpeg-ext8", file, file, { channels: 1 });
  });

  // pydicom 2.3 here has no decoder for 12-bit JPEG: the second opinion is its rendering of the source.
  it("JPEG extended 12-bit (dcmcjpeg +ee) and JPEG lossless process 14 (dcmcjpeg +el), against pydicom's rendering of the source", async () => {
    for (const [name, args, ts] of [["jpeg-ext12", ["+ee"], "1.2.840.10008.1.2.4.51"], ["jpeg-p14", ["+el"], "1.2.840.10008.1.2.4.57"]] as const) {
      const source = mr12();
      const file = await debianTool(dir, "dcmcjpeg", [...args], source, name);
      expect(readFileMeta(file).transferSyntaxUid).toBe(ts);
      const rs = await agreesWithPydicom(name, file, source, { channels: 1 });
      if (name === "jpeg-p14") expect(rs[0]).toBeGreaterThan(0.999); // lossless
    }
  });

  // No Debian tool writes HTJ2K (GDCM here predates it): dcmjs-codecs' encoder makes it, and the source is the reference.
  it("HTJ2K lossless (dcmjs-codecs), against pydicom's rendering of the source", async () => {
    const source = syntheticCt().file;
    const file = await transcode(source, "1.2.840.10008.1.2.4.201");
    const rs = await agreesWithPydicom("htj2k", file, source, { channels: 1, window: CT_WINDOW });
    expect(rs[0]).toBeGreaterThan(0.999);
  });

  it.each([
    ["Explicit VR Little Endian", "1.2.840.10008.1.2.1"],
    ["JPEG Baseline (Process 1)", JPEG_BASELINE],
  ])("an implicit-VR dataset under %s is read as implicit, as pydicom reads it, with a warning in provenance", async (syntaxName, ts) => {
    const source = ts === JPEG_BASELINE ? await transcode(mr8(), JPEG_BASELINE) : mr8();
    const mislabelled = implicitUnderExplicit(source, readFileMeta(source).end);
    expect(readFileMeta(mislabelled).transferSyntaxUid).toBe(ts);
    await agreesWithPydicom(`mislabelled-${ts}`, mislabelled, mislabelled, { channels: 1 });
    const [img] = await prepareImages({ id: "mislabelled", data: mislabelled.toString("base64") }, OPTS);
    expect(img!.dicom!.transferSyntaxUid).toBe(ts);
    expect(img!.dicom!.warnings).toEqual([`the dataset is written in implicit VR although its transfer syntax (${syntaxName}) says explicit VR; read as implicit VR`]);
  });
});
