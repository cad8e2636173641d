import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { crc32, deflateSync } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareImage, readImageDimensions, sniffImageMime } from "../../../src/core/intake/images.js";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";

const IMAGES = fileURLToPath(new URL("../../../../shared/benchmarks/samples/images/", import.meta.url));
const LIMITS = { maxBytes: 1024 * 1024, maxPixels: 40_000_000 };

function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A real, decodable PNG (8-bit greyscale) — or, with `idat: false`, just its header. */
function png(width: number, height: number, idat = true): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  const parts = [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr)];
  if (idat) {
    const raw = Buffer.alloc((width + 1) * height); // filter byte 0 + zero pixels per row
    parts.push(chunk("IDAT", deflateSync(raw)));
  }
  parts.push(chunk("IEND", Buffer.alloc(0)));
  return Buffer.concat(parts);
}

function gif(width: number, height: number, version = "GIF89a"): Buffer {
  const b = Buffer.alloc(13 + 1);
  b.write(version, 0, "latin1");
  b.writeUInt16LE(width, 6);
  b.writeUInt16LE(height, 8);
  b[13] = 0x3b; // trailer
  return b;
}

function riff(fourcc: string, payload: Buffer): Buffer {
  const head = Buffer.alloc(20);
  head.write("RIFF", 0, "latin1");
  head.writeUInt32LE(12 + payload.length, 4);
  head.write("WEBP", 8, "latin1");
  head.write(fourcc, 12, "latin1");
  head.writeUInt32LE(payload.length, 16);
  return Buffer.concat([head, payload]);
}

function webpLossy(width: number, height: number): Buffer {
  const p = Buffer.alloc(10);
  p.set([0x9d, 0x01, 0x2a], 3);
  p.writeUInt16LE(width, 6);
  p.writeUInt16LE(height, 8);
  return riff("VP8 ", p);
}

function webpLossless(width: number, height: number): Buffer {
  const p = Buffer.alloc(5);
  p[0] = 0x2f;
  p.writeUInt32LE(((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14), 1);
  return riff("VP8L", p);
}

function webpExtended(width: number, height: number): Buffer {
  const p = Buffer.alloc(10);
  p.writeUIntLE(width - 1, 4, 3);
  p.writeUIntLE(height - 1, 7, 3);
  return riff("VP8X", p);
}

async function rejection(p: Promise<unknown>): Promise<MedmmvError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(MedmmvError);
  return e as MedmmvError;
}

// Sizes as reported by file(1) for the shipped VQA-RAD samples.
const SAMPLE_JPEGS = [
  ["synpic26764.jpg", 1024, 1192],
  ["synpic38531.jpg", 1024, 873],
  ["synpic47191.jpg", 1024, 652],
  ["synpic676.jpg", 800, 907],
] as const;

describe("sniffImageMime and readImageDimensions", () => {
  it.each(SAMPLE_JPEGS)("reads the real JPEG %s as %i×%i", (name, width, height) => {
    const buf = readFileSync(path.join(IMAGES, name));
    expect(sniffImageMime(buf)).toBe("image/jpeg");
    expect(readImageDimensions(buf, "image/jpeg")).toEqual({ width, height });
  });

  it("recognises PNG, both GIF versions and the three WebP variants", () => {
    expect(sniffImageMime(png(3, 2))).toBe("image/png");
    expect(readImageDimensions(png(3, 2), "image/png")).toEqual({ width: 3, height: 2 });
    for (const v of ["GIF87a", "GIF89a"]) {
      expect(sniffImageMime(gif(7, 5, v))).toBe("image/gif");
      expect(readImageDimensions(gif(7, 5, v), "image/gif")).toEqual({ width: 7, height: 5 });
    }
    expect(readImageDimensions(webpLossy(640, 480), "image/webp")).toEqual({ width: 640, height: 480 });
    expect(readImageDimensions(webpLossless(300, 16384), "image/webp")).toEqual({ width: 300, height: 16384 });
    expect(readImageDimensions(webpExtended(70000, 3), "image/webp")).toEqual({ width: 70000, height: 3 });
    for (const w of [webpLossy(1, 1), webpLossless(1, 1), webpExtended(1, 1)]) expect(sniffImageMime(w)).toBe("image/webp");
  });

  it("rejects other formats and near misses", () => {
    expect(sniffImageMime(Buffer.from("%PDF-1.7 ..."))).toBeNull();
    expect(sniffImageMime(Buffer.from("GIF90a......"))).toBeNull();
    expect(sniffImageMime(Buffer.from("RIFF\0\0\0\0WAVEfmt "))).toBeNull();
    expect(sniffImageMime(Buffer.from([0xff, 0xd8]))).toBeNull();
    expect(sniffImageMime(png(1, 1).subarray(0, 7))).toBeNull();
    expect(sniffImageMime(Buffer.alloc(0))).toBeNull();
  });

  it("returns null for truncated or malformed headers", () => {
    const jpeg = readFileSync(path.join(IMAGES, "synpic676.jpg"));
    const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
    expect(sof).toBeGreaterThan(0);
    expect(readImageDimensions(jpeg.subarray(0, sof + 6), "image/jpeg")).toBeNull();
    // A segment length that runs past the end of the buffer.
    expect(readImageDimensions(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0xff, 0xff, 0, 0]), "image/jpeg")).toBeNull();
    // Start of scan before any frame header.
    expect(readImageDimensions(Buffer.from([0xff, 0xd8, 0xff, 0xda, 0, 2]), "image/jpeg")).toBeNull();
    expect(readImageDimensions(png(4, 4).subarray(0, 20), "image/png")).toBeNull();
    expect(readImageDimensions(png(0, 4, false), "image/png")).toBeNull();
    expect(readImageDimensions(gif(5, 5).subarray(0, 8), "image/gif")).toBeNull();
    expect(readImageDimensions(webpLossy(4, 4).subarray(0, 25), "image/webp")).toBeNull();
  });

  it("never throws or reads out of bounds on arbitrary bytes after a valid signature", () => {
    const heads: [Buffer, "image/jpeg" | "image/png" | "image/gif" | "image/webp"][] = [
      [Buffer.from([0xff, 0xd8, 0xff]), "image/jpeg"],
      [png(1, 1).subarray(0, 8), "image/png"],
      [Buffer.from("GIF89a"), "image/gif"],
      [Buffer.from("RIFF\0\0\0\0WEBPVP8X"), "image/webp"],
    ];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 }), fc.uint8Array({ maxLength: 64 }), (k, tail) => {
        const [head, mime] = heads[k]!;
        const dims = readImageDimensions(Buffer.concat([head, Buffer.from(tail)]), mime);
        return dims === null || (dims.width > 0 && dims.height > 0);
      }),
      { numRuns: 500 },
    );
  });
});

describe("prepareImage", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-images-"));
    await writeFile(path.join(dir, "scan.png"), png(4, 3));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("loads base64, hashes the bytes and reads the size", async () => {
    const bytes = png(4, 3);
    const img = await prepareImage({ id: "p1", data: bytes.toString("base64"), caption: "Figure A" }, { ...LIMITS, allowPath: false });
    expect(img).toMatchObject({ id: "p1", mimeType: "image/png", width: 4, height: 3, caption: "Figure A" });
    expect(img.sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(Buffer.from(img.data, "base64").equals(bytes)).toBe(true);
  });

  it("accepts a data: URL prefix and MIME-wrapped lines", async () => {
    const b64 = gif(2, 2).toString("base64");
    const a = await prepareImage({ id: "g", data: `data:image/gif;base64,${b64}` }, { ...LIMITS, allowPath: false });
    expect(a.mimeType).toBe("image/gif");
    const wrapped = png(2, 2).toString("base64").replace(/(.{8})/g, "$1\r\n");
    const b = await prepareImage({ id: "w", data: wrapped }, { ...LIMITS, allowPath: false });
    expect(b.mimeType).toBe("image/png");
  });

  it("uses the type of the bytes, not the declared one", async () => {
    const jpeg = readFileSync(path.join(IMAGES, "synpic47191.jpg"));
    const img = await prepareImage({ id: "x", mimeType: "image/png", data: jpeg.toString("base64") }, { ...LIMITS, allowPath: false });
    expect(img.mimeType).toBe("image/jpeg");
    expect([img.width, img.height]).toEqual([1024, 652]);
  });

  it("refuses malformed base64 with the image id and the fix", async () => {
    for (const data of ["not base64!!", "abc", "QUJD=Q==", "", "QU JD"]) {
      const e = await rejection(prepareImage({ id: "bad-b64", data }, { ...LIMITS, allowPath: false }));
      expect(e.code).toBe("INVALID_INPUT");
      expect(e.message).toContain("bad-b64");
    }
  });

  it("refuses formats other than JPEG/PNG/GIF/WebP, naming the accepted ones", async () => {
    const e = await rejection(
      prepareImage({ id: "doc", mimeType: "image/png", data: Buffer.from("%PDF-1.4 fake").toString("base64") }, { ...LIMITS, allowPath: false }),
    );
    expect(e.code).toBe("UNSUPPORTED_MEDIA");
    expect(e.message).toMatch(/JPEG.*PNG.*GIF.*WebP/);
  });

  it("refuses a bomb-like PNG header by pixel count, without any image data to decode", async () => {
    const bomb = png(100_000, 100_000, false); // 10^10 pixels claimed, no IDAT at all
    expect(bomb.length).toBeLessThan(100);
    const e = await rejection(prepareImage({ id: "bomb", data: bomb.toString("base64") }, { ...LIMITS, allowPath: false }));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.message).toContain("100000×100000");
    expect(e.message).toContain(String(LIMITS.maxPixels));
  });

  it("refuses images over the byte limit, from base64 and from files, giving the limit", async () => {
    const big = png(64, 64);
    const e1 = await rejection(prepareImage({ id: "big", data: big.toString("base64") }, { maxBytes: 50, maxPixels: 1e9, allowPath: false }));
    expect(e1.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e1.message).toContain("50 bytes");
    const e2 = await rejection(
      prepareImage({ id: "bigfile", path: "synpic676.jpg" }, { maxBytes: 1000, maxPixels: 1e9, baseDir: IMAGES, allowPath: true }),
    );
    expect(e2.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e2.message).toContain("1000 bytes");
  });

  it("reads paths only when allowed, relative to baseDir", async () => {
    const denied = await rejection(prepareImage({ id: "p", path: "scan.png" }, { ...LIMITS, baseDir: dir, allowPath: false }));
    expect(denied.code).toBe("INVALID_INPUT");
    expect(denied.message).toMatch(/"p".*data/);

    const img = await prepareImage({ id: "p", path: "scan.png" }, { ...LIMITS, baseDir: dir, allowPath: true });
    expect([img.mimeType, img.width, img.height]).toEqual(["image/png", 4, 3]);

    const missing = await rejection(prepareImage({ id: "gone", path: "nope.png" }, { ...LIMITS, baseDir: dir, allowPath: true }));
    expect(missing.code).toBe("INVALID_INPUT");
    expect(missing.message).toContain("gone");
    expect(missing.message).toContain(path.join(dir, "nope.png"));

    const notFile = await rejection(prepareImage({ id: "d", path: "." }, { ...LIMITS, baseDir: dir, allowPath: true }));
    expect(notFile.code).toBe("INVALID_INPUT");
  });

  it("refuses a JPEG whose header is cut before the frame size", async () => {
    const jpeg = readFileSync(path.join(IMAGES, "synpic676.jpg")).subarray(0, 20);
    const e = await rejection(prepareImage({ id: "cut", data: jpeg.toString("base64") }, { ...LIMITS, allowPath: false }));
    expect(e.code).toBe("INVALID_INPUT");
  });
});

describe("prepareCase", () => {
  it("assigns a case id when missing and keeps a given one", async () => {
    const a = await prepareCase({ question: "q?" }, { ...LIMITS, allowPath: false });
    expect(a.id).toMatch(/^case-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(a.images).toEqual([]);
    const b = await prepareCase({ question: "q?" }, { ...LIMITS, allowPath: false });
    expect(b.id).not.toBe(a.id);
    const c = await prepareCase({ id: "mine", question: "q?", notes: "n" }, { ...LIMITS, allowPath: false });
    expect(c).toMatchObject({ id: "mine", question: "q?", notes: "n" });
  });

  it("loads every image in order", async () => {
    const c = await prepareCase(
      {
        question: "q?",
        images: [
          { id: "a", data: png(2, 2).toString("base64") },
          { id: "b", path: "synpic38531.jpg" },
        ],
      },
      { ...LIMITS, baseDir: IMAGES, allowPath: true },
    );
    expect(c.images.map((i) => [i.id, i.mimeType, i.width])).toEqual([
      ["a", "image/png", 2],
      ["b", "image/jpeg", 1024],
    ]);
  });

  it("refuses duplicate image ids", async () => {
    const data = png(1, 1).toString("base64");
    const e = await rejection(
      prepareCase({ question: "q?", images: [{ id: "x", data }, { id: "x", data }] }, { ...LIMITS, allowPath: false }),
    );
    expect(e.code).toBe("INVALID_INPUT");
    expect(e.message).toContain('"x"');
  });
});
