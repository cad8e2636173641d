import { afterEach, describe, expect, it } from "vitest";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { configureDecodePool, decodePoolSize, DEFAULT_DECODE_POOL, withDecodeWorker } from "../../../../src/core/intake/dicom/decode-pool.js";
import { rejection } from "../../../support/rejection.js";
import { dicomFile, LOSSLESS, transcode } from "./dicom-fixtures.js";
import { ct64, deflateBomb, manyElements, nestedSequences, sizBomb } from "./hostile-dicom.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false } as const;
const b64 = (b: Buffer) => b.toString("base64");
const asTenant = (tenant: string) => ({ ...OPTS, tenant });

afterEach(() => configureDecodePool(DEFAULT_DECODE_POOL));

describe("hostile DICOM is refused before it reaches a codec, and cannot poison or stall decoding for others", () => {
  it("a JPEG 2000 codestream whose SIZ claims 60000² under a 64×64 header is refused (400) before decoding; after 50 of them from one tenant another tenant's J2K and RLE are still accepted", async () => {
    const j2k = await transcode(ct64(), LOSSLESS["JPEG 2000 Lossless"]);
    const rle = await transcode(ct64(), LOSSLESS["RLE Lossless"]);
    const bomb = sizBomb(j2k, 60_000);
    expect(bomb.length).toBeLessThan(16_000);
    const first = await rejection(prepareImages({ id: "bomb", data: b64(bomb) }, asTenant("mallory")));
    expect(first.code).toBe("INVALID_INPUT");
    expect(first.message).toMatch(/codestream declares 60000×60000 where the header says 64×64; refused before decoding/);
    for (let i = 0; i < 49; i++) await rejection(prepareImages({ id: `bomb${i}`, data: b64(sizBomb(j2k, 16_000 + i)) }, asTenant("mallory")));
    const [okJ2k] = await prepareImages({ id: "j2k", data: b64(j2k) }, asTenant("alice"));
    const [okRle] = await prepareImages({ id: "rle", data: b64(rle) }, asTenant("alice"));
    expect(okJ2k!.width).toBe(64);
    expect(okRle!.width).toBe(64);
  });

  it("a deflate bomb (1 GB of pixel data from about 1 MB on the wire) is refused with 413 while inflating, and memory stays far below 1 GB", async () => {
    const bomb = await deflateBomb(1024 * 1024 * 1024);
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
    const before = process.memoryUsage().rss;
    const e = await rejection(prepareImages({ id: "deflated", data: b64(bomb) }, { ...OPTS, maxDecodedBytes: 100_000_000 }));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.message).toMatch(/inflates past 100000000 bytes/);
    expect(process.memoryUsage().rss - before).toBeLessThan(512 * 1024 * 1024);
  });

  it.each([2000, 100_000])("sequences nested %i deep are refused (413) by the structure walk, before any parser sees them", async (depth) => {
    const e = await rejection(prepareImages({ id: "nested", data: b64(nestedSequences(depth)) }, OPTS));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.message).toMatch(/nested more than 32 deep; refused before parsing/);
  });

  it("a header of 150,000 elements is refused (413); one of 2,000 is read", async () => {
    const e = await rejection(prepareImages({ id: "wide", data: b64(manyElements(150_000)) }, OPTS));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.message).toMatch(/more than 100000 elements/);
    const [ok] = await prepareImages({ id: "ok", data: b64(manyElements(2_000)) }, OPTS);
    expect(ok!.width).toBe(64);
  });

  it("refusals name what is wrong: a truncated object, a missing pixel data element", async () => {
    const full = ct64();
    const truncated = await rejection(prepareImages({ id: "cut", data: b64(full.subarray(0, full.length - 100)) }, OPTS));
    expect(truncated.message).toMatch(/the file is truncated: element \(7FE0,0010\) needs 8192 bytes/);
    const noPixels = full.subarray(0, full.lastIndexOf(Buffer.from([0xe0, 0x7f, 0x10, 0x00])));
    expect((await rejection(prepareImages({ id: "sr", data: b64(noPixels) }, OPTS))).message).toMatch(/has no pixel data/);
  });

  it("an object that holds its thread past the time limit is refused (422) and the next object gets a fresh thread", async () => {
    const j2k = await transcode(ct64(), LOSSLESS["JPEG 2000 Lossless"]);
    // Four 512² JPEG 2000 frames: parsing and decoding them takes far longer than the 1 ms allowed.
    const slow = await transcode(dicomFile({ modality: "MR", rows: 512, columns: 512, frames: 4, stored: new Uint16Array(512 * 512 * 4).map((_, i) => (i * 2654435761) % 4096) }), LOSSLESS["JPEG 2000 Lossless"]);
    configureDecodePool({ objectTimeoutMs: 1 });
    const e = await rejection(prepareImages({ id: "slow", data: b64(slow) }, OPTS));
    expect(e.code).toBe("UNPROCESSABLE");
    expect(e.message).toMatch(/decoding took longer than 1 ms/);
    configureDecodePool(DEFAULT_DECODE_POOL);
    const [ok] = await prepareImages({ id: "next", data: b64(j2k) }, OPTS);
    expect(ok!.width).toBe(64);
  });

  it("a thread whose codec memory passed the bound is replaced after its object", async () => {
    const rle = await transcode(ct64(), LOSSLESS["RLE Lossless"]);
    await prepareImages({ id: "warm", data: b64(rle) }, OPTS);
    expect(decodePoolSize()).toBeGreaterThan(0);
    const threads = decodePoolSize();
    configureDecodePool({ maxWasmBytes: 1 });
    await prepareImages({ id: "grown", data: b64(rle) }, OPTS);
    expect(decodePoolSize()).toBe(threads - 1);
    const [ok] = await prepareImages({ id: "after", data: b64(rle) }, OPTS);
    expect(ok!.width).toBe(64);
  });

  it("tenants are served in turn: one tenant's six queued objects do not make another's wait behind all of them", async () => {
    configureDecodePool({ size: 2 });
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const job = (tenant: string) =>
      withDecodeWorker(tenant, async () => {
        order.push(tenant);
        await gate;
      });
    const all = [...Array.from({ length: 6 }, () => job("mallory")), job("alice")];
    release();
    await Promise.all(all);
    // Two threads start mallory's first two; alice is next in turn, before mallory's other four.
    expect(order.indexOf("alice")).toBeLessThanOrEqual(3);
  });
});
