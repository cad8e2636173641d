import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { prepareImages, type PrepareImageOptions } from "../../../../src/core/intake/images.js";
import { rejection } from "../../../support/rejection.js";
import { dicomFile, syntheticCt } from "./dicom-fixtures.js";

/**
 * A PACS that misbehaves on purpose, on a loopback port: each test sets how it answers.
 * What the client must do is in docs/imaging.md#dicomweb.
 */
type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler;
const paths: string[] = [];
let server: Server;
let root: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    paths.push(req.url ?? "");
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  root = `http://127.0.0.1:${(server.address() as { port: number }).port}/dicom-web`;
});
afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  paths.length = 0;
});

const json = (res: ServerResponse, body: unknown) => {
  res.writeHead(200, { "content-type": "application/dicom+json" });
  res.end(JSON.stringify(body));
};
const series = (uid: string) => [{ "0020000E": { vr: "UI", Value: [uid] } }];
const instances = (n: number) => Array.from({ length: n }, (_, k) => ({ "00080018": { vr: "UI", Value: [`2.25.9${k + 1}`] }, "00200013": { vr: "IS", Value: [k + 1] } }));
function multipart(file: Buffer): { body: Buffer; type: string } {
  const b = "medmmv-boundary";
  return { body: Buffer.concat([Buffer.from(`--${b}\r\nContent-Type: application/dicom\r\n\r\n`), file, Buffer.from(`\r\n--${b}--\r\n`)]), type: `multipart/related; type="application/dicom"; boundary=${b}` };
}

/** A WADO-RS answer of `file`, whole. */
const serve =
  (file: Buffer): Handler =>
  (_req, res) => {
    const { body, type } = multipart(file);
    res.writeHead(200, { "content-type": type });
    res.end(body);
  };

/** QIDO answers for study 2.25.1, series 2.25.10 of `n` instances; WADO-RS by `wado`. */
function pacs(n: number, wado: Handler, seriesUid = "2.25.10"): Handler {
  return (req, res) => {
    if (req.url!.endsWith("/studies/2.25.1/series")) return json(res, series(seriesUid));
    if (req.url!.endsWith("/instances")) return json(res, instances(n));
    wado(req, res);
  };
}

const TIMEOUT = 400;
const opts = (extra: Partial<PrepareImageOptions["dicomweb"]> = {}, more: Partial<PrepareImageOptions> = {}): PrepareImageOptions => ({
  maxBytes: 10 * 1024 * 1024,
  maxPixels: 40_000_000,
  allowPath: false,
  dicomweb: { servers: [root], maxInstances: 4, timeoutMs: TIMEOUT, attempts: 3, ...extra },
  ...more,
});
const ref = (o: Record<string, unknown> = {}) => ({ id: "ct", dicomweb: { server: root, study: "2.25.1", ...o } });
const wadoCalls = () => paths.filter((p) => /\/instances\/[0-9.]+$/.test(p)).length;

describe("DICOMweb bodies are read inside the retry and its timeouts", () => {
  it("a body that drips past the timeout ends in 422 naming it, after 3 attempts", async () => {
    handler = pacs(1, (_req, res) => {
      res.writeHead(200, { "content-type": 'multipart/related; type="application/dicom"; boundary=x', "content-length": "100000" });
      const drip = setInterval(() => res.write("x"), 20);
      res.on("close", () => clearInterval(drip));
    });
    const e = await rejection(prepareImages(ref(), opts()));
    expect(e.code).toBe("UNPROCESSABLE");
    expect(e.message).toMatch(new RegExp(`the answer's body did not arrive whole within ${TIMEOUT} ms, after 3 attempts`));
    expect(wadoCalls()).toBe(3);
  });

  it("a body that stops short of its Content-Length ends in 422 naming it, after 3 attempts", async () => {
    handler = pacs(1, (_req, res) => {
      res.writeHead(200, { "content-type": 'multipart/related; type="application/dicom"; boundary=x', "content-length": "5000" });
      res.write(Buffer.alloc(1000), () => res.socket!.destroy());
    });
    const e = await rejection(prepareImages(ref(), opts()));
    expect(e.code).toBe("UNPROCESSABLE");
    expect(e.message).toMatch(/the answer's body was cut off \(the connection closed or reset before its end\), after 3 attempts/);
    expect(wadoCalls()).toBe(3);
  });

  it("a connection reset mid-body ends in 422 naming it, after 3 attempts", async () => {
    handler = pacs(1, (_req, res) => {
      res.writeHead(200, { "content-type": 'multipart/related; type="application/dicom"; boundary=x' });
      res.write(Buffer.alloc(1000), () => res.socket!.resetAndDestroy());
    });
    const e = await rejection(prepareImages(ref(), opts()));
    expect(e.code).toBe("UNPROCESSABLE");
    expect(e.message).toMatch(/cut off .*after 3 attempts/);
  });

  it("a 503 is retried and a later good answer is used", async () => {
    const file = syntheticCt().file;
    let n = 0;
    handler = pacs(1, (_req, res) => {
      if (n++ === 0) {
        res.writeHead(503, { "retry-after": "0" });
        res.end();
        return;
      }
      const { body, type } = multipart(file);
      res.writeHead(200, { "content-type": type, "content-length": String(body.length) });
      res.end(body);
    });
    // A generous per-attempt limit: this test is about the retry, and a loaded machine must not turn the good answer into a timeout.
    const [img] = await prepareImages(ref(), opts({ timeoutMs: 30_000 }));
    expect(img!.width).toBe(32);
    expect(wadoCalls()).toBe(2);
  });
});

describe("Retry-After", () => {
  it("a Retry-After longer than the timeout ends at once in 422 saying so, not after sleeping", async () => {
    handler = pacs(1, (_req, res) => {
      res.writeHead(503, { "retry-after": "3600" });
      res.end();
    });
    const e = await rejection(prepareImages(ref(), opts()));
    expect(e.code).toBe("UNPROCESSABLE");
    expect(e.message).toMatch(/the server asked to be retried after 3600 s, longer than MEDMMV_DICOMWEB_TIMEOUT_MS/);
    expect(wadoCalls()).toBe(1);
  });
});

describe("what a PACS answers, and what a caller names, is checked before it becomes a request", () => {
  it("a SeriesInstanceUID from QIDO that is not a UID never becomes a path", async () => {
    handler = pacs(1, (_req, res) => res.end(), "../../../../capture");
    const e = await rejection(prepareImages(ref(), opts()));
    expect(e.code).toBe("NOT_FOUND");
    expect(paths.some((p) => p.includes("capture"))).toBe(false);
  });

  it("servers are compared after normalisation: another spelling of the root is the root; a dot-segment escape is not", async () => {
    handler = pacs(1, serve(syntheticCt().file));
    const [img] = await prepareImages(ref({ server: `${root.replace("http", "HTTP")}//` }), opts());
    expect(img!.width).toBe(32);
    const e = await rejection(prepareImages(ref({ server: `${root}/../capture` }), opts()));
    expect(e.message).toMatch(/not in MEDMMV_DICOMWEB_SERVERS; it was not contacted/);
  });

  it("a caller that must bring its own token gets 403 without one, and nothing is requested; with one, or a server configured for it, the study is read", async () => {
    handler = pacs(1, serve(syntheticCt().file));
    const e = await rejection(prepareImages(ref(), opts({ tokenlessServers: [] })));
    expect(e.code).toBe("FORBIDDEN");
    expect(e.message).toMatch(/must send its own accessToken/);
    expect(paths).toHaveLength(0);
    expect(await prepareImages(ref({ accessToken: "caller-token" }), opts({ tokenlessServers: [] }))).toHaveLength(1);
    expect(await prepareImages(ref(), opts({ tokenlessServers: [`${root}/`] }))).toHaveLength(1);
  });
});

describe("a series is refused before it is fetched or decoded beyond the case's picture budget", () => {
  it("500 instances with room for 2 pictures: 413 and no instance fetched", async () => {
    handler = pacs(500, (_req, res) => res.end());
    const e = await rejection(prepareImages(ref(), opts({}, { pictures: { left: 2, max: 16 } })));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.message).toMatch(/its 4 instances would take the case past 16 pictures; nothing was fetched/);
    expect(wadoCalls()).toBe(0);
  });

  it("16 instances of 16 frames: the first fills the budget and no further instance is fetched", async () => {
    handler = pacs(16, serve(dicomFile({ modality: "MR", rows: 8, columns: 8, frames: 16, stored: new Uint16Array(8 * 8 * 16).map((_, i) => i) })));
    const e = await rejection(prepareImages(ref(), opts({ maxInstances: 16 }, { maxDicomFrames: 16, pictures: { left: 16, max: 16 } })));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.message).toMatch(/pictures are spent after 1 of the series' 16 instances/);
    expect(wadoCalls()).toBe(1);
  });
});
