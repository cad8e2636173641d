/**
 * NEMA WG-04's MR1_JLSL (JPEG-LS lossless, 16-bit signed MR; test/fixtures/dicom-scanners/README.md)
 * was refused as undecodable: its encoder put a zero byte between the entropy-coded data and
 * EOI (`2B 00 FF D9`), and the JPEG-LS codec dcmjs-imaging carries (CharLS 2.3.4) stops there
 * (a WebAssembly trap, "unreachable"), where DCMTK's dcmdjpls reads it. When the stream as
 * stored fails, it is decoded again without the fill (a stream's last data byte may be zero
 * itself: transfer-syntaxes.test.ts's CT ends so); the picture must be DCMTK's decoding of the same file, read
 * by pydicom, under the window we chose. A codestream the codec really cannot read is refused
 * naming the codec, not as "truncated".
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MedmmvError } from "../../../../src/core/contracts/errors.js";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { decodePoolSize } from "../../../../src/core/intake/dicom/decode-pool.js";
// @ts-expect-error plain JavaScript module of the decoding thread (no types)
import { jpegLsWithoutFillBeforeEoi } from "../../../../src/core/intake/dicom/frame-values.mjs";
import { ourPixels, pydicomFrames, secondOpinionMissing } from "./second-opinion.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false } as const;
const MR1 = readFileSync(path.join(import.meta.dirname, "../../../fixtures/dicom-scanners/wg04-MR1_JLSL.dcm"));
const cut = (b: number[]): number[] => Array.from(jpegLsWithoutFillBeforeEoi(Uint8Array.from(b)) as Uint8Array);

describe("zero fill between JPEG-LS entropy-coded data and EOI", () => {
  it("is left out; a zero byte after 0xFF (entropy-coded data), fragment padding after EOI and a stream without fill are kept", () => {
    expect(cut([0xff, 0xd8, 0x2b, 0x00, 0xff, 0xd9])).toEqual([0xff, 0xd8, 0x2b, 0xff, 0xd9]);
    expect(cut([0xff, 0xd8, 0x2b, 0x00, 0x00, 0xff, 0xd9, 0x00])).toEqual([0xff, 0xd8, 0x2b, 0xff, 0xd9, 0x00]);
    expect(cut([0xff, 0xd8, 0x12, 0xff, 0x00, 0xff, 0xd9])).toEqual([0xff, 0xd8, 0x12, 0xff, 0x00, 0xff, 0xd9]);
    expect(cut([0xff, 0xd8, 0x2b, 0xff, 0xd9])).toEqual([0xff, 0xd8, 0x2b, 0xff, 0xd9]);
    expect(cut([0xff, 0xd8, 0x2b, 0x00])).toEqual([0xff, 0xd8, 0x2b, 0x00]);
  });
});

describe.skipIf(secondOpinionMissing())("WG-04 MR1_JLSL", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-jls-fill-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("renders as DCMTK's dcmdjpls decodes it (read by pydicom under the same window), pixel for pixel", async () => {
    const [img] = await prepareImages({ id: "mr1", data: MR1.toString("base64") }, OPTS);
    expect(img!.dicom!.transferSyntaxUid).toBe("1.2.840.10008.1.2.4.80");
    expect([img!.width, img!.height]).toEqual([512, 512]);
    const src = path.join(dir, "mr1-jls.dcm");
    const out = path.join(dir, "mr1-dcmtk.dcm");
    await writeFile(src, MR1);
    await promisify(execFile)("dcmdjpls", [src, out]);
    const [theirs] = await pydicomFrames(dir, await readFile(out), "mr1-ref", img!.dicom!.window!);
    const ours = await ourPixels(img!.data, 1);
    // pydicom's window output spans the signed 16-bit range (the object's PixelRepresentation): brought to 0–255.
    expect(theirs).toHaveLength(ours.length);
    let worst = 0;
    for (const [i, v] of ours.entries()) worst = Math.max(worst, Math.abs(v - Math.round(((theirs![i]! + 32768) * 255) / 65535)));
    expect(worst).toBeLessThanOrEqual(1);
    expect(new Set(ours).size).toBeGreaterThan(100);
  });

  it("the thread whose codec trapped (the stream as stored, before the retry without fill) is replaced after the object; the next object decodes", async () => {
    const plain = readFileSync(path.join(import.meta.dirname, "../../../fixtures/dicom-scanners/SC_rgb_small_odd.dcm"));
    await prepareImages({ id: "warm", data: plain.toString("base64") }, OPTS);
    const threads = decodePoolSize();
    expect(threads).toBeGreaterThan(0);
    await prepareImages({ id: "mr1", data: MR1.toString("base64") }, OPTS);
    expect(decodePoolSize()).toBe(threads - 1);
    const [ok] = await prepareImages({ id: "after", data: MR1.toString("base64") }, OPTS);
    expect(ok!.width).toBe(512);
  });

  it("a byte the codec cannot read past (not fill: 0x01) is refused naming the codec, not as truncated", async () => {
    const bad = Buffer.from(MR1);
    const eoi = bad.lastIndexOf(Buffer.from([0xff, 0xd9]));
    expect(bad[eoi - 1]).toBe(0x00);
    bad[eoi - 1] = 0x01;
    const e = await prepareImages({ id: "mr1", data: bad.toString("base64") }, OPTS).then(() => null, (err: unknown) => err);
    expect(e).toBeInstanceOf(MedmmvError);
    expect((e as MedmmvError).message).toMatch(/JPEG-LS Lossless codec \(CharLS/);
    expect((e as MedmmvError).message).not.toMatch(/truncated/);
  });
});
