/**
 * Compressed whole-slide tiles (JPEG 2000, JPEG-LS, …) wrapped as one minimal multi-frame Part 10
 * object, so that the decode pool's renderer (with its codecs, heap limits and time limit)
 * decodes them: only what the renderer needs (image pixel module and the encapsulated frames,
 * one fragment each), no identifying attribute at all.
 */

function element(group: number, el: number, vr: string, value: Buffer): Buffer {
  const long = vr === "OB" || vr === "OW" || vr === "SQ" || vr === "UN" || vr === "UT";
  const head = Buffer.alloc(long ? 12 : 8);
  head.writeUInt16LE(group, 0);
  head.writeUInt16LE(el, 2);
  head.write(vr, 4, "latin1");
  if (long) head.writeUInt32LE(value.length, 8);
  else head.writeUInt16LE(value.length, 6);
  return Buffer.concat([head, value]);
}

function us(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
}

/** A string value padded to even length (with NUL for UIDs, space otherwise). */
function str(s: string, pad: "\0" | " "): Buffer {
  return Buffer.from(s.length % 2 ? s + pad : s, "latin1");
}

function item(tagElement: number, value: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16LE(0xfffe, 0);
  head.writeUInt16LE(tagElement, 2);
  head.writeUInt32LE(value.length, 4);
  return Buffer.concat([head, value]);
}

export interface TileImage {
  rows: number;
  columns: number;
  samplesPerPixel: number;
  /** 8, or 16 for a 16-bit greyscale level (fluorescence); 8 when not given. */
  bitsAllocated?: number;
  photometric: string;
}

/** `frames` (one codestream each) as a Part 10 object in `transferSyntaxUid` (an encapsulated syntax). */
export function tileObject(transferSyntaxUid: string, image: TileImage, frames: readonly Buffer[]): Buffer {
  const bits = image.bitsAllocated ?? 8;
  const metaBody = Buffer.concat([element(0x0002, 0x0001, "OB", Buffer.from([0, 1])), element(0x0002, 0x0010, "UI", str(transferSyntaxUid, "\0"))]);
  const groupLength = Buffer.alloc(4);
  groupLength.writeUInt32LE(metaBody.length);
  const pixelHead = Buffer.alloc(12);
  pixelHead.writeUInt16LE(0x7fe0, 0);
  pixelHead.writeUInt16LE(0x0010, 2);
  pixelHead.write("OB", 4, "latin1");
  pixelHead.writeUInt32LE(0xffffffff, 8);
  const fragments = frames.map((f) => item(0xe000, f.length % 2 ? Buffer.concat([f, Buffer.alloc(1)]) : f));
  return Buffer.concat([
    Buffer.alloc(128),
    Buffer.from("DICM", "latin1"),
    element(0x0002, 0x0000, "UL", groupLength),
    metaBody,
    element(0x0028, 0x0002, "US", us(image.samplesPerPixel)),
    element(0x0028, 0x0004, "CS", str(image.photometric, " ")),
    ...(image.samplesPerPixel > 1 ? [element(0x0028, 0x0006, "US", us(0))] : []),
    element(0x0028, 0x0008, "IS", str(String(frames.length), " ")),
    element(0x0028, 0x0010, "US", us(image.rows)),
    element(0x0028, 0x0011, "US", us(image.columns)),
    element(0x0028, 0x0100, "US", us(bits)),
    element(0x0028, 0x0101, "US", us(bits)),
    element(0x0028, 0x0102, "US", us(bits - 1)),
    element(0x0028, 0x0103, "US", us(0)),
    pixelHead,
    item(0xe000, Buffer.alloc(0)), // an empty basic offset table: one fragment per frame
    ...fragments,
    item(0xe0dd, Buffer.alloc(0)),
  ]);
}
