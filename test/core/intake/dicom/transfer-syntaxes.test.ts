import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { dicomFile, expectedGrey, JPEG_BASELINE, LOSSLESS, LOSSY, syntheticCt, transcode } from "./dicom-fixtures.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false } as const;

async function rendered(file: Buffer): Promise<{ px: Uint8Array; channels: number; transferSyntaxUid: string }> {
  const [img] = await prepareImages({ id: "x", data: file.toString("base64") }, OPTS);
  const { data, info } = await sharp(Buffer.from(img!.data, "base64")).raw().toBuffer({ resolveWithObject: true });
  return { px: data, channels: info.channels, transferSyntaxUid: img!.dicom!.transferSyntaxUid };
}

describe("every transfer syntax hospitals use decodes through the WASM codecs", () => {
  const { file, hu } = syntheticCt();
  const want = hu.map((h) => expectedGrey(h, 40, 400));

  it.each(Object.entries(LOSSLESS))("%s: the CT's soft-tissue rendering matches the window pixel for pixel ±1", async (_name, ts) => {
    const r = await rendered(await transcode(file, ts));
    expect(r.transferSyntaxUid).toBe(ts);
    const worst = Math.max(...want.map((w, i) => Math.abs(r.px[i * r.channels]! - w)));
    expect(worst).toBeLessThanOrEqual(1);
  });

  it.each(Object.entries(LOSSY))("%s: the rendering stays within the codec's loss (mean error under 4 grey levels)", async (_name, ts) => {
    const r = await rendered(await transcode(file, ts));
    expect(r.transferSyntaxUid).toBe(ts);
    const mean = want.reduce((n, w, i) => n + Math.abs(r.px[i * r.channels]! - w), 0) / want.length;
    expect(mean).toBeLessThan(4);
  });

  it("JPEG baseline of an RGB photograph (stored as YBR_FULL_422) comes back as RGB", async () => {
    const rgb = new Uint8Array(16 * 16 * 3);
    for (let i = 0; i < 256; i++) rgb.set([200, 40, 40], i * 3); // a red field
    const original = dicomFile({ modality: "XC", rows: 16, columns: 16, stored: rgb, rgb: true });
    const r = await rendered(await transcode(original, JPEG_BASELINE));
    expect(r.transferSyntaxUid).toBe(JPEG_BASELINE);
    const [red, green, blue] = [0, 1, 2].map((c) => r.px.filter((_, i) => i % r.channels === c).reduce((a, b) => a + b, 0) / 256);
    expect(Math.abs(red! - 200)).toBeLessThan(8);
    expect(Math.abs(green! - 40)).toBeLessThan(8);
    expect(Math.abs(blue! - 40)).toBeLessThan(8);
  });
});
