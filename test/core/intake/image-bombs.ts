/**
 * Synthetic images for the intake tests: real, decodable pictures made with sharp, and the
 * decompression bombs an attacker would send (each a few hundred bytes that claim, or
 * inflate to, far more pixels than any model reads).
 */
import { crc32, deflateSync } from "node:zlib";
import sharp from "sharp";

/** One PNG chunk: length, type, data, CRC. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A valid PNG of zero pixels (RGBA, 8 bits): 6000² of it deflates to ~140 KB and inflates to 144 MB. */
export function pngThatInflates(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const raw = Buffer.alloc((width * 4 + 1) * height); // filter byte 0 + zero pixels per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(raw, { level: 9 })),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A PNG header claiming `width`×`height` (greyscale) with a token 1 KB of pixel data. */
export function pngClaiming(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(Buffer.alloc(1024))),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A GIF whose logical screen is `screen`² but whose one frame descriptor claims `frame`². */
export function gifWithFrame(screen: number, frame: number): Buffer {
  const header = Buffer.alloc(13);
  header.write("GIF89a", 0, "latin1");
  header.writeUInt16LE(screen, 6);
  header.writeUInt16LE(screen, 8);
  header[10] = 0x80; // global colour table of 2 entries
  const descriptor = Buffer.alloc(10);
  descriptor[0] = 0x2c;
  descriptor.writeUInt16LE(frame, 5);
  descriptor.writeUInt16LE(frame, 7);
  // LZW minimum code size 2, one data sub-block, block terminator, GIF trailer.
  return Buffer.concat([header, Buffer.from([0, 0, 0, 255, 255, 255]), descriptor, Buffer.from([2, 2, 0x4c, 0x01, 0, 0x3b])]);
}

/** A real JPEG with a second start-of-frame header, claiming `side`², right after its first. */
export async function jpegWithSecondFrameHeader(side: number): Promise<Buffer> {
  const small = await realJpeg(10, 10);
  let pos = 2;
  for (;;) {
    const marker = small[pos + 1]!;
    const end = pos + 2 + small.readUInt16BE(pos + 2);
    if (marker === 0xc0) {
      const second = Buffer.from(small.subarray(pos, end));
      second.writeUInt16BE(side, 5);
      second.writeUInt16BE(side, 7);
      return Buffer.concat([small.subarray(0, end), second, small.subarray(end)]);
    }
    pos = end;
  }
}

function gradient(width: number, height: number) {
  return sharp({ create: { width, height, channels: 3, background: { r: 40, g: 120, b: 200 } } });
}

export const realJpeg = (w: number, h: number): Promise<Buffer> => gradient(w, h).jpeg().toBuffer();
export const realPng = (w: number, h: number): Promise<Buffer> => gradient(w, h).png().toBuffer();
export const realGif = (w: number, h: number): Promise<Buffer> => gradient(w, h).gif().toBuffer();
export const realWebp = (w: number, h: number): Promise<Buffer> => gradient(w, h).webp().toBuffer();
