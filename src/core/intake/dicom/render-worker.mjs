// The synchronous part of DICOM rendering (dcmjs parsing, WebAssembly decoding, LUTs), in a
// worker thread so that a large JPEG 2000 frame never stalls the server's event loop. Plain
// JavaScript on purpose: a worker is started by Node itself, whatever loads the TypeScript.
// Protocol (one job at a time per message id):
//   { id, op: "header", bytes }  → { id, ok, elements (without PixelData), pixelBytes, transferSyntaxUid }
//   { id, op: "render", items: [{ frame, window: { center, width } | null }] } → { id, ok, frames: [{ width, height, pixels, window }] }
//   { id, op: "drop" } forgets the parsed object of job `id`.
import { createRequire } from "node:module";
import { parentPort } from "node:worker_threads";

const require = createRequire(import.meta.url);
const imaging = require("dcmjs-imaging");
const dcmjs = require("dcmjs");
// The libraries' own logging could print header values (names, ids): silent.
imaging.log.setLevel("silent");
dcmjs.log.setLevel("silent");
for (const logger of Object.values(dcmjs.log.getLoggers())) logger.setLevel("silent");

const { DicomImage, NativePixelDecoder, WindowLevel } = imaging;
const ready = NativePixelDecoder.initializeAsync({ logNativeDecodersMessages: false });
const parsed = new Map();

function pixelBytes(v) {
  const parts = Array.isArray(v) ? v : [v];
  return parts.reduce((n, p) => n + (p instanceof ArrayBuffer || ArrayBuffer.isView(p) ? p.byteLength : 0), 0);
}

function message(e) {
  return String(e instanceof Error ? e.message : e).split("\n")[0].slice(0, 200);
}

parentPort.on("message", async (job) => {
  await ready;
  try {
    if (job.op === "header") {
      const image = new DicomImage(job.bytes);
      parsed.set(job.id, image);
      const { PixelData, ...rest } = image.getElements();
      // Header values as plain JSON (dcmjs decorates some values in ways a message cannot clone).
      const elements = JSON.parse(JSON.stringify(rest, (_k, v) => (v instanceof ArrayBuffer || ArrayBuffer.isView(v) ? undefined : v)));
      parentPort.postMessage({ id: job.id, ok: true, elements, hasPixelData: PixelData !== undefined, pixelBytes: pixelBytes(PixelData), transferSyntaxUid: image.getTransferSyntaxUid() });
    } else if (job.op === "render") {
      const image = parsed.get(job.id);
      const frames = [];
      for (const item of job.items) {
        let r;
        try {
          r = image.render({ frame: item.frame, renderOverlays: false, ...(item.window ? { windowLevel: new WindowLevel(item.window.width, item.window.center) } : {}) });
        } catch (e) {
          parentPort.postMessage({ id: job.id, ok: false, frame: item.frame, error: message(e) });
          return;
        }
        frames.push({ width: r.width, height: r.height, pixels: r.pixels, window: r.windowLevel ? { center: r.windowLevel.getLevel(), width: r.windowLevel.getWindow() } : null });
      }
      parentPort.postMessage({ id: job.id, ok: true, frames }, frames.map((f) => f.pixels));
    } else if (job.op === "drop") {
      parsed.delete(job.id);
    }
  } catch (e) {
    parsed.delete(job.id);
    parentPort.postMessage({ id: job.id, ok: false, error: message(e) });
  }
});
