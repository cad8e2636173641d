/**
 * A DICOMweb server that lies about whole slides (a compromised PACS, or one tenant's own on a
 * shared allow-list), for the lying-pacs bench section: each study is one of the issue's
 * scenarios. QIDO-RS, WADO-RS metadata and frame retrieval are answered as PS3.18 shapes them
 * (DICOM JSON arrays; multipart/related frames with the transfer syntax in the part type), only
 * their content lies. Every request is logged with its arrival time and, when the client drops
 * it unanswered, the time it was dropped.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import sharp from "sharp";
import { tileObject } from "../../src/core/intake/dicom/tile-object.js";

const WSI = "1.2.840.10008.5.1.4.1.1.77.1.6";
const JPEG_BASELINE = "1.2.840.10008.1.2.4.50";
const MIB = 1024 * 1024;
const v = (...x: unknown[]) => ({ Value: x });

export interface LoggedRequest {
  url: string;
  at: number;
  /** Date.now() when the client closed the connection before the answer was written. */
  droppedAt?: number;
}

export interface LyingPacs {
  root: string;
  log: LoggedRequest[];
  close(): Promise<void>;
}

/** The scenarios, by study UID. */
export const STUDIES = {
  /** 40 JPEG tiles of 4096², placed 1 px apart on a 4135 × 4096 level. */
  overlapping: "2.25.1",
  /** 40 on-grid JPEG tiles of 4096² (a 32768 × 20480 level and nothing coarser). */
  hugeTiles: "2.25.2",
  /** 64 instances, each answering ~10 MiB of metadata. */
  metadata10: "2.25.3",
  /** 64 instances of 7.5 MiB metadata: under the per-instance cap, past the series'. */
  metadata7: "2.25.4",
  /** 12 instances of ~650 bytes of metadata, each a 250,000-frame level. */
  levels12: "2.25.5",
  /** A 2-tile slide whose frame requests are never answered (the 415 scenario's slide). */
  hanging: "2.25.6",
  /** One object in MPEG-2 (415); its QIDO answer waits until the hanging slide's frame request is in flight. */
  mpeg: "2.25.7",
  /** A legitimate 4096² level of 256 JPEG tiles of 256²: canvas and all tiles together (100.7 MB decoded) pass the default 100 MB budget; canvas and the one tile in flight (50.6 MB) fit it. */
  legitimate: "2.25.8",
} as const;

/** One level's DICOM JSON, as a dicomizer writes it. */
function level(total: [number, number], tile: number, frames: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    "00080016": v(WSI),
    "00080008": v("DERIVED", "PRIMARY", "VOLUME", "NONE"),
    "00480006": { vr: "UL", Value: [total[0]] },
    "00480007": { vr: "UL", Value: [total[1]] },
    "00280011": { vr: "US", Value: [tile] },
    "00280010": { vr: "US", Value: [tile] },
    "00280008": { vr: "IS", Value: [frames] },
    "00280002": v(3),
    "00280100": v(8),
    "00280004": v("YBR_FULL_422"),
    "00209311": v("TILED_FULL"),
    ...extra,
  };
}

const at = (c: number, r: number) => ({ "0048021A": v({ "0048021E": v(c), "0048021F": v(r) }) });

/** A level's metadata padded with a private text attribute to about `bytes`. */
function padded(bytes: number, k: number): Buffer {
  return Buffer.from(JSON.stringify([level([1024 + k, 1024], 256, 16, { "00091010": { vr: "LT", Value: ["x".repeat(bytes)] } })]));
}

/** A JPEG tile of `side`² with some structure (the same tile serves every frame). */
async function jpegTile(side: number): Promise<Buffer> {
  const raw = Buffer.alloc(side * side * 3);
  for (let p = 0; p < side * side; p++) {
    const x = p % side;
    const y = Math.floor(p / side);
    raw[p * 3] = 200 + ((x * 7) % 40);
    raw[p * 3 + 1] = 120 + ((y * 3) % 60);
    raw[p * 3 + 2] = 170;
  }
  return sharp(raw, { raw: { width: side, height: side, channels: 3 } }).jpeg({ quality: 80 }).toBuffer();
}

export async function startLyingPacs(): Promise<LyingPacs> {
  const log: LoggedRequest[] = [];
  const big = await jpegTile(4096);
  const small = await jpegTile(256);
  const metadata10 = Array.from({ length: 64 }, (_, k) => padded(10 * MIB, k));
  const metadata7 = Array.from({ length: 64 }, (_, k) => padded(7.5 * MIB, k));
  const mpeg = tileObject("1.2.840.10008.1.2.4.100", { rows: 8, columns: 8, samplesPerPixel: 1, photometric: "MONOCHROME2" }, [Buffer.alloc(64)]);
  const meta: Record<string, { count: number; of: (k: number) => unknown; tile?: Buffer }> = {
    [STUDIES.overlapping]: { count: 1, of: () => [level([4096 + 39, 4096], 4096, 40, { "00209311": v("TILED_SPARSE"), "52009230": v(...Array.from({ length: 40 }, (_, k) => at(1 + k, 1))) })], tile: big },
    [STUDIES.hugeTiles]: { count: 1, of: () => [level([4096 * 8, 4096 * 5], 4096, 40)], tile: big },
    [STUDIES.metadata10]: { count: 64, of: (k) => metadata10[k] },
    [STUDIES.metadata7]: { count: 64, of: (k) => metadata7[k] },
    [STUDIES.levels12]: { count: 12, of: (k) => [level([256 * 500 + k, 256 * 500], 256, 250_000)] },
    [STUDIES.hanging]: { count: 1, of: () => [level([512, 256], 256, 2)] },
    [STUDIES.legitimate]: { count: 1, of: () => [level([4096, 4096], 256, 256)], tile: small },
  };
  const frameInFlight = (study: string) => log.some((r) => r.url.includes(`/studies/${study}/`) && r.url.includes("/frames/"));

  const json = (res: ServerResponse, body: unknown) => {
    res.writeHead(200, { "content-type": "application/dicom+json" });
    res.end(Buffer.isBuffer(body) ? body : JSON.stringify(body));
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? "";
    const m = /\/studies\/([0-9.]+)\/series(?:\/([0-9.]+)\/instances(?:\/([0-9.]+)(\/metadata|\/frames\/([0-9,]+))?)?)?$/.exec(url);
    if (!m) return void res.writeHead(404).end();
    const [, study, series, instance, tail, frames] = m;
    if (!series) {
      if (study === STUDIES.mpeg) {
        // The refusal comes mid-read: only once the other image's frame request is in flight.
        const wait = setInterval(() => {
          if (!frameInFlight(STUDIES.hanging)) return;
          clearInterval(wait);
          json(res, [{ "0020000E": v(`${study}.1`) }]);
        }, 1);
        res.on("close", () => clearInterval(wait));
        return;
      }
      return json(res, [{ "0020000E": v(`${study}.1`) }]);
    }
    if (study === STUDIES.mpeg) {
      if (!instance) return json(res, [{ "00080018": v(`${study}.9`), "00200013": v(1) }]);
      const b = "lying-pacs";
      res.writeHead(200, { "content-type": `multipart/related; type="application/dicom"; boundary=${b}` });
      return void res.end(Buffer.concat([Buffer.from(`--${b}\r\nContent-Type: application/dicom\r\n\r\n`), mpeg, Buffer.from(`\r\n--${b}--\r\n`)]));
    }
    const s = meta[study!];
    if (!s) return void res.writeHead(404).end();
    if (!instance) return json(res, Array.from({ length: s.count }, (_, k) => ({ "00080018": v(`${study}.7${k}`), "00080016": v(WSI), "00200013": v(k + 1) })));
    const k = Number(instance.slice(study!.length + 2));
    if (tail === "/metadata") return json(res, s.of(k));
    if (frames && study === STUDIES.hanging) return; // never answered
    if (frames && s.tile) {
      const b = "lying-frames";
      const parts = frames.split(",").map(() => Buffer.concat([Buffer.from(`--${b}\r\nContent-Type: application/octet-stream; transfer-syntax=${JPEG_BASELINE}\r\n\r\n`), s.tile!, Buffer.from("\r\n")]));
      res.writeHead(200, { "content-type": `multipart/related; type="application/octet-stream"; transfer-syntax=${JPEG_BASELINE}; boundary=${b}` });
      return void res.end(Buffer.concat([...parts, Buffer.from(`--${b}--\r\n`)]));
    }
    res.writeHead(404).end();
  };
  const server: Server = createServer((req, res) => {
    const entry: LoggedRequest = { url: req.url ?? "", at: Date.now() };
    log.push(entry);
    res.on("close", () => {
      if (!res.writableEnded) entry.droppedAt = Date.now();
    });
    handle(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    root: `http://127.0.0.1:${(server.address() as { port: number }).port}/dicom-web`,
    log,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
