import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync } from "node:zlib";
import fc from "fast-check";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareImage, sniffImageMime } from "../../../src/core/intake/images.js";
import { gifWithFrame, jpegWithSecondFrameHeader, pngChunk, pngClaiming, pngThatInflates, realGif, realJpeg, realPng, realWebp } from "./image-bombs.js";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";

const IMAGES = fileURLToPath(new URL("../../../test/fixtures/benchmark-samples/images/", import.meta.url));
const LIMITS = { maxBytes: 1024 * 1024, maxPixels: 40_000_000 };

/** A real, decodable PNG (8-bit greyscale) — or, with `idat: false`, just its header. */
function png(width: number, height: number, idat = true): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  const parts = [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk("IHDR", ihdr)];
  if (idat) {
    const raw = Buffer.alloc((width + 1) * height); // filter byte 0 + zero pixels per row
    parts.push(pngChunk("IDAT", deflateSync(raw)));
  }
  parts.push(pngChunk("IEND", Buffer.alloc(0)));
  return Buffer.concat(parts);
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

const NO_PATH = { ...LIMITS, allowPath: false } as const;
const b64 = (b: Buffer) => b.toString("base64");

describe("sniffImageMime", () => {
  it("recognises the real JPEGs, PNG, GIF and WebP from their bytes", async () => {
    for (const [name] of SAMPLE_JPEGS) expect(sniffImageMime(readFileSync(path.join(IMAGES, name)))).toBe("image/jpeg");
    expect(sniffImageMime(await realPng(3, 2))).toBe("image/png");
    expect(sniffImageMime(await realGif(3, 2))).toBe("image/gif");
    expect(sniffImageMime(await realWebp(3, 2))).toBe("image/webp");
  });

  it("rejects other formats and near misses", () => {
    expect(sniffImageMime(Buffer.from("%PDF-1.7 ..."))).toBeNull();
    expect(sniffImageMime(Buffer.from("GIF90a......"))).toBeNull();
    expect(sniffImageMime(Buffer.from("RIFF\0\0\0\0WAVEfmt "))).toBeNull();
    expect(sniffImageMime(Buffer.from([0xff, 0xd8]))).toBeNull();
    expect(sniffImageMime(png(1, 1).subarray(0, 7))).toBeNull();
    expect(sniffImageMime(Buffer.alloc(0))).toBeNull();
  });
});

describe("the decoder reads every size header (decompression bombs)", () => {
  it.each(SAMPLE_JPEGS)("reads the real JPEG %s as %i×%i", async (name, width, height) => {
    const img = await prepareImage({ id: "s", data: b64(readFileSync(path.join(IMAGES, name))) }, NO_PATH);
    expect([img.width, img.height]).toEqual([width, height]);
  });

  it("reads PNG, GIF and WebP sizes with the decoder", async () => {
    for (const [bytes, mime] of [[await realPng(3, 2), "image/png"], [await realGif(7, 5), "image/gif"], [await realWebp(64, 48), "image/webp"]] as const) {
      const img = await prepareImage({ id: "x", data: b64(bytes) }, NO_PATH);
      expect(img.mimeType).toBe(mime);
    }
    expect((await prepareImage({ id: "g", data: b64(await realGif(7, 5)) }, NO_PATH)).width).toBe(7);
    expect((await prepareImage({ id: "w", data: b64(await realWebp(64, 48)) }, NO_PATH)).height).toBe(48);
  });

  it("refuses a 10×10 GIF screen carrying a 60000² frame with 413", async () => {
    const bomb = gifWithFrame(10, 60_000);
    expect(bomb.length).toBeLessThan(100);
    const e = await rejection(prepareImage({ id: "gif-bomb", data: b64(bomb) }, NO_PATH));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.message).toContain("gif-bomb");
    expect(e.message).toContain(String(LIMITS.maxPixels));
  });

  it("refuses a JPEG with a second 60000² frame header, naming the decoder's reason", async () => {
    const bomb = await jpegWithSecondFrameHeader(60_000);
    const e = await rejection(prepareImage({ id: "jpeg-bomb", data: b64(bomb) }, NO_PATH));
    // libjpeg refuses the file's structure before it sizes anything: a 4xx, never decoded.
    expect(e.code).toBe("INVALID_INPUT");
    expect(e.message).toMatch(/jpeg-bomb.*two SOF markers/);
  });

  it("refuses a 140 KB PNG that inflates to 144 MB with 413, by decoded bytes", async () => {
    const bomb = pngThatInflates(6000, 6000);
    expect(bomb.length).toBeLessThan(LIMITS.maxBytes);
    const e = await rejection(prepareImage({ id: "png-bomb", data: b64(bomb) }, NO_PATH));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.details).toMatchObject({ decodedBytes: 144_000_000, maxDecodedBytes: 100_000_000 });
    // The same picture is admitted when an operator raises the limit on purpose.
    const ok = await prepareImage({ id: "png-big", data: b64(bomb) }, { ...NO_PATH, maxDecodedBytes: 150_000_000 });
    expect([ok.width, ok.height]).toEqual([6000, 6000]);
  });

  it("refuses a PNG cut inside its pixel data (the decoder reads it all)", async () => {
    const whole = await sharp({ create: { width: 300, height: 300, channels: 3, background: "#000", noise: { type: "gaussian", mean: 128, sigma: 40 } } }).png().toBuffer();
    const e = await rejection(prepareImage({ id: "cut-png", data: b64(whole.subarray(0, Math.floor(whole.length / 2))) }, NO_PATH));
    expect(e.code).toBe("INVALID_INPUT");
    expect(e.message).toContain("cut-png");
  });

  it("never crashes, hangs or grows without bound on fuzzed headers (fast-check)", async () => {
    const seeds = [await realJpeg(16, 12), await realPng(16, 12), await realGif(16, 12), await realWebp(16, 12)];
    const limits = { maxBytes: 64 * 1024, maxPixels: 1_000_000, maxDecodedBytes: 4_000_000, allowPath: false };
    const rssBefore = process.memoryUsage().rss;
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: seeds.length - 1 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        fc.option(fc.nat(), { nil: undefined }),
        async (k, edits, keep) => {
          const seed = seeds[k]!;
          // Sometimes cut short as well: a truncated tail is the commonest corruption.
          const bytes = Buffer.from(keep === undefined ? seed : seed.subarray(0, 1 + (keep % seed.length)));
          // Header bytes only: the first 64 (where every size field of these formats lives).
          for (const [at, value] of edits) bytes[at % Math.min(64, bytes.length)] = value;
          const outcome = await prepareImage({ id: "fuzz", data: b64(bytes) }, limits).then(
            (img) => img.width! * img.height! <= limits.maxPixels && img.width! > 0,
            (e: unknown) => e instanceof MedmmvError && ["INVALID_INPUT", "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA"].includes(e.code),
          );
          return outcome;
        },
      ),
      { numRuns: 300, seed: 22 },
    );
    // Every input is bounded by the limits, so the whole run stays small and quick even on a
    // loaded machine (the figures are generous ceilings, not timings).
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * 1024 * 1024);
  }, 90_000);
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
    const b64 = (await realGif(2, 2)).toString("base64");
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

  it("refuses a PNG header claiming 10^10 pixels, before anything is inflated", async () => {
    const bomb = pngClaiming(100_000, 100_000); // 10^10 pixels claimed, 1 KB of data
    expect(bomb.length).toBeLessThan(100);
    const e = await rejection(prepareImage({ id: "bomb", data: bomb.toString("base64") }, { ...LIMITS, allowPath: false }));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
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

  it("refuses a JPEG cut short, naming what the decoder found", async () => {
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
