/**
 * A PACS that lies (compromised, or one tenant's own on a shared allow-list) about a whole
 * slide: tiles placed to overlap, tiles too large to decode, metadata answers too large to
 * parse, levels declaring hundreds of thousands of frames. Each ends in a clear 4xx before the
 * lie costs memory or time: the tests check what was fetched and decoded (conditions the reader
 * controls), not how long it took. And a case refused for one image stops reading the others.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { until } from "../../../support/until.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { prepareCase } from "../../../../src/core/intake/case-intake.js";
import { prepareImages, type PrepareImageOptions } from "../../../../src/core/intake/images.js";
import { MAX_METADATA_BYTES_PER_INSTANCE, MAX_METADATA_BYTES_PER_SERIES } from "../../../../src/core/intake/dicom/whole-slide.js";
import { cellsIn, pyramidLevels, tilesIn } from "../../../../src/core/intake/dicom/wsi-levels.js";
import { rejection } from "../../../support/rejection.js";
import { dicomFile } from "./dicom-fixtures.js";

// What stays on the heap is measured after a collection, not with the garbage of the parse.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const WSI = "1.2.840.10008.5.1.4.1.1.77.1.6";
const v = (...x: unknown[]) => ({ Value: x });

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler;
let server: Server;
let root: string;
const requests: string[] = [];
/** Requests whose connection closed before an answer was sent (the client gave up on them). */
const abandoned: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? "");
    res.on("close", () => {
      if (!res.writableEnded) abandoned.push(req.url ?? "");
    });
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  root = `http://127.0.0.1:${(server.address() as { port: number }).port}/dicom-web`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise((r) => server.close(r));
});
beforeEach(() => {
  requests.length = 0;
  abandoned.length = 0;
});

const json = (res: ServerResponse, body: unknown) => {
  res.writeHead(200, { "content-type": "application/dicom+json" });
  res.end(typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body));
};

/** A slide of `levels` instances (2.25.7k): QIDO answers, each instance's metadata from `meta`, frames by `frames`. */
function slide(levels: number, meta: (k: number) => unknown, frames: Handler = (_q, r) => void r.writeHead(404).end()): Handler {
  return (req, res) => {
    const url = req.url!;
    if (url.endsWith("/studies/2.25.1/series")) return json(res, [{ "0020000E": { vr: "UI", Value: ["2.25.10"] } }]);
    if (url.endsWith("/instances")) return json(res, Array.from({ length: levels }, (_, k) => ({ "00080018": v(`2.25.7${k}`), "00080016": v(WSI), "00200013": v(k + 1) })));
    const m = /\/instances\/2\.25\.7(\d+)\/metadata$/.exec(url);
    if (m) return json(res, meta(Number(m[1])));
    frames(req, res);
  };
}

/** One level's DICOM JSON: a total matrix, a tile size, frames, and extras. */
const level = (total: [number, number], tile: number, frames: number, extra: Record<string, unknown> = {}) => [
  { "00480006": v(total[0]), "00480007": v(total[1]), "00280011": v(tile), "00280010": v(tile), "00280008": v(frames), "00280002": v(3), "00280100": v(8), "00280004": v("YBR_FULL_422"), "00209311": v("TILED_SPARSE"), ...extra },
];
const at = (c: number, r: number) => ({ "0048021A": v({ "0048021E": v(c), "0048021F": v(r) }) });

const opts = (more: Partial<PrepareImageOptions> = {}): PrepareImageOptions => ({
  maxBytes: 64 * 1024 * 1024,
  maxPixels: 40_000_000,
  allowPath: false,
  dicomweb: { servers: [root], maxInstances: 4, timeoutMs: 5000, attempts: 1 },
  ...more,
});
const ref = { id: "slide", dicomweb: { server: "", study: "2.25.1" } };
const slideRef = () => ({ ...ref, dicomweb: { ...ref.dicomweb, server: root } });
const frameRequests = () => requests.filter((u) => u.includes("/frames/")).length;
const metadataRequests = () => requests.filter((u) => u.endsWith("/metadata")).length;

describe("a PACS that lies about a slide's tiles", () => {
  it("4096² tiles placed 1 px apart (overlapping) are refused from the metadata: 400, no tile fetched", async () => {
    handler = slide(1, () => level([4096 + 40, 4096], 4096, 40, { "52009230": v(...Array.from({ length: 40 }, (_, k) => at(1 + k, 1))) }));
    const e = await rejection(prepareImages(slideRef(), opts()));
    expect(e.code).toBe("INVALID_INPUT");
    expect(e.message).toMatch(/off its 4096×4096 tile grid/);
    expect(frameRequests()).toBe(0);
  });

  it("a tile placed outside its level's matrix is refused: 400, no tile fetched", async () => {
    handler = slide(1, () => level([512, 512], 256, 2, { "52009230": v(at(1, 1), at(1025, 1)) }));
    const e = await rejection(prepareImages(slideRef(), opts()));
    expect(e.message).toMatch(/outside its total pixel matrix/);
    expect(frameRequests()).toBe(0);
  });

  it("40 on-grid 4096² tiles whose decoded bytes pass the picture's budget: 413 before any tile is fetched", async () => {
    handler = slide(1, () => level([4096 * 8, 4096 * 5], 4096, 40, { "00209311": v("TILED_FULL") }));
    const e = await rejection(prepareImages(slideRef(), opts({ maxPixels: 1e10, modelLongSide: 1536 })));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(frameRequests()).toBe(0);
  });
});

describe("a PACS that lies about a slide's metadata", () => {
  /** A well-formed level whose answer is padded (a private attribute) to `bytes`. */
  const padded = (bytes: number) => JSON.stringify(level([1024, 1024], 256, 16, { "00091010": { vr: "LT", Value: ["x".repeat(bytes)] } }));

  it("an instance's metadata answer past the per-instance cap is refused after that one answer (413)", async () => {
    handler = slide(64, () => padded(MAX_METADATA_BYTES_PER_INSTANCE + 1024));
    const e = await rejection(prepareImages(slideRef(), opts()));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(metadataRequests()).toBe(1);
  });

  it("64 instances of large metadata: read up to the series cap, then 413; the JSON is parsed as it arrives and not kept", async () => {
    const each = Math.floor(MAX_METADATA_BYTES_PER_INSTANCE * 0.75);
    // One answer's bytes, made before the measurement (the server here shares the test's heap).
    const answer = Buffer.from(padded(each));
    handler = slide(64, () => answer);
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const read = prepareImages(slideRef(), opts());
    const e = await rejection(read);
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.message).toMatch(/metadata answers pass/);
    expect(metadataRequests()).toBe(Math.floor(MAX_METADATA_BYTES_PER_SERIES / each) + 1);
    // What stays on the heap once garbage is collected is the summaries (a few hundred bytes
    // each), not the answers (which alone are tens of MB): less than one answer, with room to spare.
    gc();
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(each);
  });

  it("an answer nested thousands deep is refused (422) without building its nesting", async () => {
    handler = slide(1, () => `[{"00091010":{"vr":"SQ","Value":${"[".repeat(200_000)}`);
    const e = await rejection(prepareImages(slideRef(), opts()));
    expect(e.code).toBe("UNPROCESSABLE");
    expect(e.message).toMatch(/nests deeper than/);
  });

  it("an answer that is not one dataset is refused (422) naming it", async () => {
    for (const [body, why] of [["{}", /not a JSON array/], ["[1]", /something other than a dataset/], ["[{}, {}]", /more than one dataset/], ['[{"00280011": {"Value": [256]}', /not JSON|ends mid-value/]] as const) {
      handler = slide(1, () => body);
      const e = await rejection(prepareImages(slideRef(), opts()));
      expect(e.code, body).toBe("UNPROCESSABLE");
      expect(e.message, body).toMatch(why);
    }
  });

  it("12 small metadata answers declaring 250,000-frame levels end in a clear 413 with no tile fetched", async () => {
    handler = slide(12, (k) => level([256 * 500 + k, 256 * 500], 256, 250_000, { "00209311": v("TILED_FULL") }));
    const e = await rejection(prepareImages(slideRef(), opts()));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(metadataRequests()).toBe(12);
    expect(frameRequests()).toBe(0);
  });

  it("levels declaring 250,000 frames each are read without listing their tiles; a picture's tiles are computed for its cells only", () => {
    const metadata = Array.from({ length: 12 }, (_, k) => ({ uid: `2.25.7${k}`, meta: level([256 * 500 + k, 256 * 500], 256, 250_000, { "00209311": v("TILED_FULL") })[0]! }));
    const levels = pyramidLevels(metadata);
    expect(levels).toHaveLength(12);
    expect(levels.every((l) => l.tiles.length === 0 && l.frames === 250_000)).toBe(true);
    const r = { x: 1000, y: 1000, width: 512, height: 512 };
    expect(cellsIn(levels[0]!, r)).toBe(9);
    expect(tilesIn(levels[0]!, r)).toHaveLength(9);
  });
});

describe("a refused or cancelled case stops reading its images", () => {
  /**
   * A client that would wait ten minutes for the PACS: only the abort can drop its request within
   * the test's time, so a test passes only if the abort reached the fetch.
   */
  const PATIENT = { servers: [] as string[], maxInstances: 4, timeoutMs: 600_000, attempts: 1 };
  beforeEach(() => {
    PATIENT.servers = [root];
  });
  /** A slide of one 2×1-tile level whose frame requests are never answered. */
  const hanging = () => slide(1, () => level([512, 256], 256, 2, { "00209311": v("TILED_FULL") }), () => undefined);

  it("an abort stops a frame request in flight, and nothing more is asked of the PACS", async () => {
    handler = hanging();
    const ctrl = new AbortController();
    const read = rejection(prepareImages(slideRef(), opts({ signal: ctrl.signal, dicomweb: PATIENT })));
    await until(() => frameRequests() === 1 || undefined);
    const asked = requests.length;
    ctrl.abort(new Error("cancelled"));
    await read;
    await until(() => abandoned.length === 1 || undefined);
    expect(requests.length).toBe(asked);
  }, 20_000);

  it("a case refused for one image (415) aborts its slide's reading: the PACS request in flight is dropped, none follows", async () => {
    // Study 2.25.2 holds one object in a transfer syntax nobody renders (415); its QIDO answer
    // waits until the slide's frame request is in flight, so the refusal comes mid-read.
    const slideHandler = hanging();
    const mpeg = dicomFile({ modality: "OT", rows: 8, columns: 8, stored: new Uint8Array(64), transferSyntax: "1.2.840.10008.1.2.4.100" });
    handler = (req, res) => {
      const url = req.url!;
      if (url.endsWith("/studies/2.25.2/series")) return void until(() => frameRequests() === 1 || undefined).then(
          () => json(res, [{ "0020000E": v("2.25.20") }]),
          () => res.destroy(),
        );
      if (url.endsWith("/series/2.25.20/instances")) return json(res, [{ "00080018": v("2.25.99"), "00200013": v(1) }]);
      if (url.endsWith("/instances/2.25.99")) {
        const b = "medmmv-boundary";
        res.writeHead(200, { "content-type": `multipart/related; type="application/dicom"; boundary=${b}` });
        return void res.end(Buffer.concat([Buffer.from(`--${b}\r\nContent-Type: application/dicom\r\n\r\n`), mpeg, Buffer.from(`\r\n--${b}--\r\n`)]));
      }
      slideHandler(req, res);
    };
    let refusedAt = -1;
    const e = (await prepareCase({ question: "What is it?", images: [slideRef(), { id: "mpeg", dicomweb: { server: root, study: "2.25.2" } }] }, opts({ dicomweb: PATIENT })).catch((err: unknown) => {
      refusedAt = requests.length;
      return err;
    })) as { code?: string; message?: string };
    expect(e.code, e.message).toBe("UNSUPPORTED_MEDIA");
    // The slide's frame request in flight was dropped by the client, and nothing more was asked.
    await until(() => abandoned.some((u) => u.includes("/frames/")) || undefined);
    expect(requests.length).toBe(refusedAt);
  }, 20_000);
});
