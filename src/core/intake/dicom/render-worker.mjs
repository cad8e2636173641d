// The synchronous part of DICOM rendering (dcmjs parsing, WebAssembly decoding, LUTs), in a
// worker thread of the decode pool (decode-pool.ts) so that a large JPEG 2000 frame never
// stalls the server's event loop. Plain JavaScript on purpose: a worker is started by Node
// itself, whatever loads the TypeScript. One object at a time (the pool lends a thread to one
// object); a new "header" forgets the previous object.
// Protocol:
//   { id, op: "header", bytes, attributes: [names] } → { id, ok, elements (only `attributes`, as plain strings/numbers), slide? (a whole-slide instance's tile positions and optics), hasPixelData, pixelBytes, transferSyntaxUid }
//   { id, op: "render", items: [{ frame, window: { center, width } | null }], more? } (more: the object is kept for another render) → { id, ok, frames: [{ width, height, pixels, window }] }
// Every reply carries `wasmBytes`, the codecs' WebAssembly memory, so the pool can replace a
// thread whose memory has grown past its bound.
import { createRequire } from "node:module";
import { parentPort } from "node:worker_threads";

// The codecs' memory is not reachable through dcmjs-imaging's API: note every memory a
// WebAssembly instance of this thread exports as it is created.
const memories = [];
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async (...args) => {
  const result = await instantiate.apply(WebAssembly, args);
  const instance = result.instance ?? result;
  for (const value of Object.values(instance.exports ?? {})) if (value instanceof WebAssembly.Memory) memories.push(value);
  return result;
};
const wasmBytes = () => memories.reduce((n, m) => n + m.buffer.byteLength, 0);

const require = createRequire(import.meta.url);
const imaging = require("dcmjs-imaging");
const dcmjs = require("dcmjs");
// The libraries' own logging could print header values (names, ids): silent.
imaging.log.setLevel("silent");
dcmjs.log.setLevel("silent");
for (const logger of Object.values(dcmjs.log.getLoggers())) logger.setLevel("silent");

const { DicomImage, NativePixelDecoder, WindowLevel } = imaging;
const ready = NativePixelDecoder.initializeAsync({ logNativeDecodersMessages: false });
let current = null;

function pixelBytes(v) {
  const parts = Array.isArray(v) ? v : [v];
  return parts.reduce((n, p) => n + (p instanceof ArrayBuffer || ArrayBuffer.isView(p) ? p.byteLength : 0), 0);
}

function message(e) {
  return String(e instanceof Error ? e.message : e).split("\n")[0].slice(0, 200);
}

/** A header value as the main thread reads it: strings and numbers only, bounded. */
function plain(v, depth = 0) {
  if (typeof v === "string") return v.slice(0, 1024);
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (Array.isArray(v) && depth === 0) return v.slice(0, 16).map((x) => plain(x, 1)).filter((x) => x !== undefined);
  if (v && typeof v === "object" && depth <= 1) {
    // A person name's component groups (Alphabetic, Ideographic, Phonetic).
    const out = {};
    for (const k of ["Alphabetic", "Ideographic", "Phonetic"]) if (typeof v[k] === "string") out[k] = v[k].slice(0, 1024);
    return Object.keys(out).length ? out : undefined;
  }
  return undefined;
}

const WSI_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.77.1.6";
/** Most per-frame positions sent back (as many frames as an object may declare). */
const MAX_POSITIONS = 10000;

/** A sequence's first item (dcmjs gives a sequence as an array, a one-item one sometimes as the item). */
function first(v) {
  return Array.isArray(v) ? v[0] : v && typeof v === "object" ? v : undefined;
}

/**
 * What a whole-slide instance says about its tiles and optics, as plain bounded values: each
 * frame's place in the total pixel matrix (PlanePositionSlideSequence, 1-based) when the
 * frames carry one, the level's PixelSpacing, and the optical paths (an ICC profile only as
 * present or not).
 */
function slideHeader(all) {
  const perFrame = Array.isArray(all.PerFrameFunctionalGroupsSequence) ? all.PerFrameFunctionalGroupsSequence.slice(0, MAX_POSITIONS) : [];
  const positions = perFrame.map((g) => {
    const p = first(g?.PlanePositionSlideSequence);
    const c = Number(p?.ColumnPositionInTotalImagePixelMatrix);
    const r = Number(p?.RowPositionInTotalImagePixelMatrix);
    return Number.isFinite(c) && Number.isFinite(r) ? [c, r] : null;
  });
  const spacing = first(first(all.SharedFunctionalGroupsSequence)?.PixelMeasuresSequence)?.PixelSpacing;
  const paths = (Array.isArray(all.OpticalPathSequence) ? all.OpticalPathSequence : all.OpticalPathSequence ? [all.OpticalPathSequence] : []).slice(0, 8);
  return {
    positions: positions.length && positions.every((p) => p !== null) ? positions : null,
    pixelSpacing: Array.isArray(spacing) && spacing.length === 2 ? spacing.map(Number) : null,
    opticalPaths: paths.map((p) => ({
      iccProfile: p.ICCProfile !== undefined,
      id: typeof p.OpticalPathIdentifier === "string" ? p.OpticalPathIdentifier.slice(0, 64) : undefined,
      description: typeof p.OpticalPathDescription === "string" ? p.OpticalPathDescription.slice(0, 200) : undefined,
      illumination: typeof first(p.IlluminationTypeCodeSequence)?.CodeMeaning === "string" ? first(p.IlluminationTypeCodeSequence).CodeMeaning.slice(0, 200) : undefined,
    })),
  };
}

function reply(body, transfer) {
  parentPort.postMessage({ ...body, wasmBytes: wasmBytes() }, transfer);
}

parentPort.on("message", async (job) => {
  await ready;
  try {
    if (job.op === "header") {
      current = null;
      const image = new DicomImage(job.bytes);
      current = image;
      const all = image.getElements();
      // RLE stores each sample as its own segment, so a colour frame decodes plane by plane
      // whatever PlanarConfiguration says (PS3.5 G.2; pydicom and DCMTK read it so); the
      // renderer follows PlanarConfiguration, so it is set to what the decoded frame is.
      if (image.getTransferSyntaxUid() === "1.2.840.10008.1.2.5" && Number(all.SamplesPerPixel) === 3) image.setElement("PlanarConfiguration", "1");
      const elements = {};
      for (const name of job.attributes) {
        const v = plain(all[name]);
        if (v !== undefined) elements[name] = v;
      }
      reply({ id: job.id, ok: true, elements, ...(all.SOPClassUID === WSI_SOP_CLASS ? { slide: slideHeader(all) } : {}), hasPixelData: all.PixelData !== undefined, pixelBytes: pixelBytes(all.PixelData), transferSyntaxUid: image.getTransferSyntaxUid() });
    } else if (job.op === "render") {
      const frames = [];
      for (const item of job.items) {
        let r;
        try {
          r = current.render({ frame: item.frame, renderOverlays: false, ...(item.window ? { windowLevel: new WindowLevel(item.window.width, item.window.center) } : {}) });
        } catch (e) {
          reply({ id: job.id, ok: false, frame: item.frame, error: message(e) });
          return;
        }
        frames.push({ width: r.width, height: r.height, pixels: r.pixels, window: r.windowLevel ? { center: r.windowLevel.getLevel(), width: r.windowLevel.getWindow() } : null });
      }
      // Kept only when the caller has more frames to ask for (a whole slide's tiles, in batches).
      if (!job.more) current = null;
      reply({ id: job.id, ok: true, frames }, frames.map((f) => f.pixels));
    }
  } catch (e) {
    current = null;
    reply({ id: job.id, ok: false, error: message(e) });
  }
});
