/**
 * Real image files built byte by byte (with correct CRCs), for every suite that needs
 * image bytes: a decoder, not only our header reader, would accept them — which is the
 * point of a decompression bomb.
 */
import { deflateSync } from "node:zlib";

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A PNG of `width`×`height`: 8-bit greyscale (colour type 0) or RGB (2), whose IDAT is
 * `scanlines` deflated — each row a filter byte then its pixels when the image is meant
 * to decode, or anything at all when only the header matters.
 */
export function encodePng(width: number, height: number, colourType: 0 | 2, scanlines: Buffer, deflateLevel = 6): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.writeUInt8(8, 8); // bit depth
  ihdr.writeUInt8(colourType, 9);
  ihdr.writeUInt8(0, 10); // deflate
  ihdr.writeUInt8(0, 11); // adaptive filtering
  ihdr.writeUInt8(0, 12); // no interlace
  const idat = deflateSync(scanlines, { level: deflateLevel });
  return Buffer.concat([PNG_SIGNATURE, chunk("IHDR", ihdr), chunk("IDAT", idat), chunk("IEND", Buffer.alloc(0))]);
}

/**
 * A PNG whose header says `width`×`height` (8-bit grey) and whose IDAT is whatever
 * `rawBytes` of zero scanline data deflate to. With a huge canvas and a few hundred bytes
 * of IDAT this is a decompression bomb: tiny on the wire, gigabytes once inflated. With
 * the default it is also the cheap stand-in image of the HTTP and eval tests (any size, each
 * its own sha256): up to a megabyte of scanlines it carries every row, so it decodes; past
 * that only 4 KB, because such a canvas is refused by its header before anyone decodes it.
 */
export function pngWithCanvas(width: number, height: number, rawBytes = (width + 1) * height <= 1 << 20 ? (width + 1) * height : 4096): Buffer {
  return encodePng(width, height, 0, Buffer.alloc(rawBytes, 0), 9);
}

/** A complete, decodable small PNG (every scanline present). */
export function smallPng(width = 8, height = 8): Buffer {
  return pngWithCanvas(width, height, (width + 1) * height);
}

/**
 * A GIF whose logical screen and one frame claim the given size, with a token of LZW data:
 * a decoder reads both headers (and refuses a big claim) before it inflates anything.
 */
export function gifWithCanvas(width: number, height: number): Buffer {
  const head = Buffer.alloc(13);
  head.write("GIF89a", 0, "latin1");
  head.writeUInt16LE(width, 6);
  head.writeUInt16LE(height, 8);
  head[10] = 0x80; // a global colour table of two entries follows
  const frame = Buffer.alloc(10);
  frame[0] = 0x2c; // image descriptor at (0,0), the size of the screen
  frame.writeUInt16LE(width, 5);
  frame.writeUInt16LE(height, 7);
  // LZW minimum code size 2, one two-byte sub-block, block terminator, trailer.
  return Buffer.concat([head, Buffer.from([0, 0, 0, 255, 255, 255]), frame, Buffer.from([2, 2, 0x4c, 0x01, 0, 0x3b])]);
}

/** A real 8×8 baseline JPEG (synthetic, mid grey), made once with libjpeg. */
const TINY_JPEG = Buffer.from(
  "/9j/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAAIAAgDASIAAhEBAxEB/8QAFAABAAAAAAAAAAAAAAAAAAAAAP/EABQQAQAAAAAAAAAAAAAAAAAAAAD/xAAUAQEAAAAAAAAAAAAAAAAAAAAA/8QAFBEBAAAAAAAAAAAAAAAAAAAAAP/aAAwDAQACEQMRAD8AAA//2Q==",
  "base64",
);

/** That JPEG with its SOF0 frame header rewritten to claim the given size. */
export function jpegWithCanvas(width: number, height: number): Buffer {
  const out = Buffer.from(TINY_JPEG);
  const sof = out.indexOf(Buffer.from([0xff, 0xc0]));
  out.writeUInt16BE(height, sof + 5);
  out.writeUInt16BE(width, sof + 7);
  return out;
}

/** A lossless WebP (VP8L) header claiming the given canvas (each side at most 16384). */
export function webpWithCanvas(width: number, height: number): Buffer {
  const bits = ((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14);
  const vp8l = Buffer.alloc(5);
  vp8l.writeUInt8(0x2f, 0);
  vp8l.writeUInt32LE(bits >>> 0, 1);
  const payload = Buffer.concat([Buffer.from("VP8L", "latin1"), Buffer.from([5, 0, 0, 0]), vp8l, Buffer.alloc(1)]);
  const head = Buffer.alloc(12);
  head.write("RIFF", 0, "latin1");
  head.writeUInt32LE(payload.length + 4, 4);
  head.write("WEBP", 8, "latin1");
  return Buffer.concat([head, payload]);
}
