/**
 * Hostile DICOM objects, built small in the test from the synthetic fixtures: codestream size
 * bombs, deflate bombs, deeply nested sequences and headers of very many elements.
 */
import { createDeflateRaw } from "node:zlib";
import { DEFLATED_LE, readFileMeta, withTransferSyntax } from "../../../../src/core/intake/dicom/dataset-walk.js";
import { dicomFile } from "./dicom-fixtures.js";

/** A 64×64 CT whose values sweep the window (stored, slope 1, intercept −1024). */
export function ct64(extra?: Record<string, unknown>): Buffer {
  const stored = new Int16Array(64 * 64).map((_, i) => 24 + ((i * 7) % 2000));
  return dicomFile({ modality: "CT", rows: 64, columns: 64, stored, signed: true, slope: 1, intercept: -1024, ...(extra ? { extra } : {}) });
}

/** The object with its JPEG 2000 SIZ claiming `size`² in one tile (the DICOM header still says 64×64). */
export function sizBomb(j2k: Buffer, size: number): Buffer {
  const out = Buffer.from(j2k);
  const at = out.indexOf(Buffer.from([0xff, 0x4f, 0xff, 0x51]));
  if (at === -1) throw new Error("no JPEG 2000 codestream in the object");
  const siz = at + 2;
  for (const offset of [6, 10, 22, 26]) out.writeUInt32BE(size, siz + offset); // Xsiz, Ysiz, XTsiz, YTsiz
  return out;
}

const PIXEL_DATA_LE = Buffer.from([0xe0, 0x7f, 0x10, 0x00]);

/** `bytes` spliced into an explicit-VR little endian file just before its PixelData. */
function beforePixelData(file: Buffer, bytes: Buffer): Buffer {
  const at = file.lastIndexOf(PIXEL_DATA_LE);
  return Buffer.concat([file.subarray(0, at), bytes, file.subarray(at)]);
}

/** ContentSequence items nested `depth` deep, every length undefined (24 bytes a level). */
export function nestedSequences(depth: number): Buffer {
  const open = Buffer.from([0x40, 0x00, 0x30, 0xa7, 0x53, 0x51, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0x00, 0xe0, 0xff, 0xff, 0xff, 0xff]);
  const close = Buffer.from([0xfe, 0xff, 0x0d, 0xe0, 0, 0, 0, 0, 0xfe, 0xff, 0xdd, 0xe0, 0, 0, 0, 0]);
  return beforePixelData(ct64(), Buffer.concat([Buffer.alloc(open.length * depth, open), Buffer.alloc(close.length * depth, close)]));
}

/** `n` short private elements (group 0009) before the pixel data: a header of very many elements. */
export function manyElements(n: number): Buffer {
  const creator = Buffer.from([0x09, 0x00, 0x10, 0x00, 0x4c, 0x4f, 0x04, 0x00, 0x54, 0x45, 0x53, 0x54]); // (0009,0010) LO "TEST"
  const el = Buffer.from([0x09, 0x00, 0x00, 0x10, 0x55, 0x53, 0x02, 0x00, 0x01, 0x00]); // (0009,1000) US 1
  return beforePixelData(ct64(), Buffer.concat([creator, Buffer.alloc(el.length * n, el)]));
}

/** A deflated-syntax object whose PixelData inflates to `inflatedBytes` zeros (the wire carries about a thousandth). */
export async function deflateBomb(inflatedBytes: number): Promise<Buffer> {
  const file = ct64();
  const meta = readFileMeta(file);
  const at = file.lastIndexOf(PIXEL_DATA_LE);
  const head = Buffer.from(file.subarray(meta.end, at));
  const pixelHeader = Buffer.from([0xe0, 0x7f, 0x10, 0x00, 0x4f, 0x42, 0, 0, 0, 0, 0, 0]); // OB
  pixelHeader.writeUInt32LE(inflatedBytes, 8);
  const deflate = createDeflateRaw({ level: 9 });
  const out: Buffer[] = [];
  deflate.on("data", (c: Buffer) => out.push(c));
  const done = new Promise((r) => deflate.on("end", r));
  deflate.write(Buffer.concat([head, pixelHeader]));
  const chunk = Buffer.alloc(1 << 20);
  for (let left = inflatedBytes; left > 0; left -= chunk.length) {
    if (!deflate.write(left >= chunk.length ? chunk : chunk.subarray(0, left))) await new Promise((r) => deflate.once("drain", r));
  }
  deflate.end();
  await done;
  return withTransferSyntax(file, DEFLATED_LE, Buffer.concat(out));
}
