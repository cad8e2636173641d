// The synchronous part of DICOM rendering (dcmjs parsing, WebAssembly decoding, LUTs), in a
// worker thread of the decode pool (decode-pool.ts) so that a large JPEG 2000 frame never
// stalls the server's event loop. Plain JavaScript on purpose: a worker is started by Node
// itself, whatever loads the TypeScript. One object at a time (the pool lends a thread to one
// object); a new "header" forgets the previous object.
// Protocol:
//   { id, op: "header", bytes, attributes: [names] } → { id, ok, elements (only `attributes`, as plain strings/numbers), slide? (a whole-slide instance's tile positions and optics), hasPixelData, floatPixelData ("float" | "double" | null), pixelBytes, transferSyntaxUid, frameWindows ([center, width, fromFunctionalGroups] | null per frame, or null), frameContents (words per frame, or null), warnings }
//   { id, op: "render", items: [{ frame, window: { center, width } | null, values? }], more? } (more: the object is kept for another render) → { id, ok, frames: [{ width, height, pixels, window }] }
//     (values: a 16-bit greyscale frame's decoded stored values, uint16 little endian, instead of RGBA: a whole slide is windowed once for all its tiles)
// Every reply carries `wasmBytes`, the codecs' WebAssembly memory, so the pool can replace a
// thread whose memory has grown past its bound, and `trapped` once a codec has trapped.
import { createRequire } from "node:module";
import { parentPort } from "node:worker_threads";
import { expandSegmentedLut, firstItem, frameContent, frameValues, rendererScale, j2kPhotometric, jpegHoldsYcbcr, jpegLsPlaneInterleaved, jpegLsWithoutFillBeforeEoi, mapThroughModalityLut, modalityLut, narrowSamples, valueBytes } from "./frame-values.mjs";

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
/** The current object's PhotometricInterpretation as written (the renderer relabels JPEG frames RGB). */
let currentPhotometric = "";

// dcmjs-imaging asks libjpeg to convert every baseline frame to RGB, and libjpeg guesses the
// stream's colour space when no Adobe marker says it: a frame labelled RGB without one is
// taken for YCbCr and comes out magenta. The decoder is told instead, frame by frame, what
// the codestream's markers and the header say together (frame-values.mjs, jpegHoldsYcbcr).
const decodeJpeg = NativePixelDecoder.decodeJpeg;
NativePixelDecoder.decodeJpeg = function (image, encoded, options) {
  if (options?.convertColorspaceToRgb && image.getSamplesPerPixel?.() === 3) {
    const bytes = encoded instanceof Uint8Array ? encoded : ArrayBuffer.isView(encoded) ? new Uint8Array(encoded.buffer, encoded.byteOffset, encoded.byteLength) : new Uint8Array(encoded);
    if (jpegHoldsYcbcr(bytes, currentPhotometric) === false) return decodeJpeg.call(this, image, encoded, { ...options, convertColorspaceToRgb: false });
  }
  return decodeJpeg.call(this, image, encoded, options);
};

// What the codecs hand over is adjusted frame by frame, as each frame is decoded (so no more
// than the frames asked for are ever held): a compressed greyscale object's Modality LUT
// Sequence is applied (the stored values exist only then; set per object by applyModalityLut),
// and colour of more than 8 bits a sample is narrowed to the 8 bits the renderer reads colour
// frames as (it reads them as bytes; before, a 16-bit sample was read as two).
let compressedLut = null;
/** Set while a frame's stored values are asked for (render item `values`): the codec's output, kept as decoded. */
let capture = null;
/**
 * Set once a codec has trapped (a WebAssembly RuntimeError: its C++ exception, built without
 * exception support, leaves its stack and heap as they were mid-call): every reply says so,
 * and the pool replaces the thread after this object instead of lending it again.
 */
let trapped = false;
for (const name of ["decodeRle", "decodeJpeg", "decodeJpegLs", "decodeJpeg2000", "decodeJpegXl"]) {
  const decode = NativePixelDecoder[name];
  if (typeof decode !== "function") continue;
  NativePixelDecoder[name] = function (pixel, encoded, ...rest) {
    let decoded;
    try {
      decoded = decode.call(this, pixel, encoded, ...rest);
    } catch (e) {
      if (e instanceof WebAssembly.RuntimeError) trapped = true;
      // WG-04's JPEG-LS encoder put a zero byte before EOI, which the codec (CharLS 2.3) refuses
      // to read past. Tried again without it only after the stream as stored has failed: a
      // stream's last data byte may itself be zero (a DCMTK-encoded CT ends so), and CharLS needs it.
      const stored = name === "decodeJpegLs" && ArrayBuffer.isView(encoded) ? new Uint8Array(encoded.buffer, encoded.byteOffset, encoded.byteLength) : null;
      const cut = stored && jpegLsWithoutFillBeforeEoi(stored);
      if (!cut || cut === stored) throw e;
      decoded = decode.call(this, pixel, cut, ...rest);
    }
    if (!decoded || !ArrayBuffer.isView(decoded)) return decoded;
    const bytes = new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength);
    if (compressedLut) mapThroughModalityLut(bytes, compressedLut.lut, compressedLut.bitsStored, compressedLut.signed);
    if (capture) capture.bytes = bytes.slice();
    const bitsAllocated = pixel?.getBitsAllocated?.();
    // The JPEG 2000 codec already hands over colour as 8-bit samples (checked on a 16-bit RGB
    // object written by gdcmconv --j2k); RLE, JPEG-LS and JPEG lossless hand over what is stored.
    if (name !== "decodeJpeg2000" && pixel?.getSamplesPerPixel?.() === 3 && (bitsAllocated === 16 || bitsAllocated === 32)) {
      return narrowSamples(bytes, bitsAllocated / 8, pixel.getBitsStored?.() || bitsAllocated);
    }
    return decoded;
  };
}

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

const first = firstItem;

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

/**
 * A palette whose lookup tables are segmented (PS3.3 C.7.9.2; ultrasound scanners write them)
 * given the plain tables the renderer reads, expanded once per object.
 */
function expandSegmentedPalette(image, all) {
  for (const colour of ["Red", "Green", "Blue"]) {
    if (all[`${colour}PaletteColorLookupTableData`] !== undefined) continue;
    const bytes = valueBytes(all[`Segmented${colour}PaletteColorLookupTableData`]);
    const descriptor = all[`${colour}PaletteColorLookupTableDescriptor`];
    if (!bytes || !Array.isArray(descriptor)) continue;
    const entries = Number(descriptor[0]) || 65536;
    const words = new Uint16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.byteLength & ~1)));
    const table = expandSegmentedLut(words, entries);
    if (!table) continue;
    image.setElement(`${colour}PaletteColorLookupTableData`, Number(descriptor[2]) === 8 ? Uint8Array.from(table).buffer : table.buffer);
  }
}

const NATIVE_LE = new Set(["1.2.840.10008.1.2", "1.2.840.10008.1.2.1"]);

/** The output values of a Modality LUT are unsigned 16-bit with no rescale: the renderer is told so. */
function relabelForLutOutput(image) {
  image.setElement("BitsAllocated", 16);
  image.setElement("BitsStored", 16);
  image.setElement("HighBit", 15);
  image.setElement("PixelRepresentation", 0);
  image.setElement("RescaleSlope", 1);
  image.setElement("RescaleIntercept", 0);
  image.setElement("PixelPaddingValue", undefined);
}

/**
 * The Modality LUT Sequence applied (PS3.3 C.11.1): each stored value of a greyscale object
 * replaced by its table entry, so the renderer windows the output values, as it does a
 * rescale — a native object's values here, a compressed one's as each frame is decoded
 * (compressedLut). An 8-bit compressed frame cannot hold 16-bit outputs: it keeps its stored
 * values and says so in a warning.
 */
function applyModalityLut(image, all) {
  const lut = modalityLut(all);
  if (!lut) return ["the Modality LUT Sequence is unusable; the stored values are shown"];
  const bitsAllocated = Number(all.BitsAllocated);
  const native = NATIVE_LE.has(image.getTransferSyntaxUid());
  if (Number(all.SamplesPerPixel) !== 1 || (bitsAllocated !== 8 && bitsAllocated !== 16) || (!native && bitsAllocated !== 16)) {
    return ["the Modality LUT Sequence is applied only to greyscale objects of 16 bits a sample (8 when uncompressed); the stored values are shown"];
  }
  if (!native) {
    compressedLut = { lut, bitsStored: Number(all.BitsStored) || 16, signed: Number(all.PixelRepresentation) === 1 };
    relabelForLutOutput(image);
    // The frame's value range is taken from the decoded (mapped) values.
    image.setElement("SmallestImagePixelValue", undefined);
    image.setElement("LargestImagePixelValue", undefined);
    return [];
  }
  const bytes = valueBytes(all.PixelData);
  if (!bytes) return [];
  const bitsStored = Number(all.BitsStored) || bitsAllocated;
  const signed = Number(all.PixelRepresentation) === 1;
  const count = Math.floor(bytes.byteLength / (bitsAllocated / 8));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint16Array(count);
  const mask = bitsStored >= 32 ? 0xffffffff : (1 << bitsStored) - 1;
  const last = lut.table.length - 1;
  // The descriptor's first mapped value is written unsigned; for signed pixels it is read signed.
  const firstMapped = signed && lut.firstMapped > 32767 ? lut.firstMapped - 65536 : lut.firstMapped;
  for (let i = 0; i < count; i++) {
    let v = (bitsAllocated === 8 ? view.getUint8(i) : view.getUint16(i * 2, true)) & mask;
    if (signed && v & (1 << (bitsStored - 1))) v -= 1 << bitsStored;
    out[i] = lut.table[Math.min(last, Math.max(0, v - firstMapped))];
  }
  image.setElement("PixelData", [out.buffer]);
  relabelForLutOutput(image);
  // The renderer windows an object without a window of its own to these (its frame value range).
  let min = 65535;
  let max = 0;
  for (let i = 0; i < count; i++) {
    if (out[i] < min) min = out[i];
    if (out[i] > max) max = out[i];
  }
  image.setElement("SmallestImagePixelValue", min);
  image.setElement("LargestImagePixelValue", max);
  return [];
}

/**
 * Native colour of more than 8 bits a sample made 8-bit before the renderer sees it (it reads
 * colour frames as bytes), narrowed once here (no larger than the file itself). Compressed
 * frames are narrowed as each is decoded (the decoder wrappers above).
 */
function narrowWideColour(image, all) {
  const bitsAllocated = Number(all.BitsAllocated);
  if (Number(all.SamplesPerPixel) !== 3 || !(bitsAllocated === 16 || bitsAllocated === 32) || !NATIVE_LE.has(image.getTransferSyntaxUid())) return;
  const bytes = valueBytes(all.PixelData);
  if (!bytes) return;
  image.setElement("PixelData", [narrowSamples(bytes, bitsAllocated / 8, Number(all.BitsStored) || bitsAllocated).buffer]);
  image.setElement("BitsAllocated", 8);
  image.setElement("BitsStored", 8);
  image.setElement("HighBit", 7);
}

/**
 * A 16-bit greyscale frame's stored values as decoded (uint16, little endian), not windowed:
 * a native frame's slice of the pixel data, a compressed frame as its codec hands it over
 * (caught in the decoder wrappers while the renderer decodes it).
 */
function storedValues(frame) {
  const all = current.getElements();
  const rows = Number(all.Rows);
  const columns = Number(all.Columns);
  if (Number(all.SamplesPerPixel) !== 1 || Number(all.BitsAllocated) !== 16) throw new Error("stored values are read only from 16-bit greyscale frames");
  const size = rows * columns * 2;
  if (NATIVE_LE.has(current.getTransferSyntaxUid())) {
    const bytes = valueBytes(all.PixelData);
    if (!bytes || bytes.byteLength < (frame + 1) * size) throw new Error(`frame ${frame + 1} is past the pixel data`);
    return { rows, columns, buffer: bytes.slice(frame * size, (frame + 1) * size).buffer };
  }
  capture = {};
  try {
    current.render({ frame, renderOverlays: false, windowLevel: new WindowLevel(1, 0) });
    const got = capture.bytes;
    if (!got || got.byteLength < size) throw new Error(`frame ${frame + 1} decoded to ${got ? got.byteLength : 0} bytes, not ${rows}×${columns} 16-bit values`);
    return { rows, columns, buffer: got.buffer.byteLength === size ? got.buffer : got.slice(0, size).buffer };
  } finally {
    capture = null;
  }
}

function reply(body, transfer) {
  parentPort.postMessage({ ...body, wasmBytes: wasmBytes(), ...(trapped ? { trapped: true } : {}) }, transfer);
}

parentPort.on("message", async (job) => {
  await ready;
  try {
    if (job.op === "header") {
      current = null;
      compressedLut = null;
      const image = new DicomImage(job.bytes);
      current = image;
      const all = image.getElements();
      // RLE stores each sample as its own segment, so a colour frame decodes plane by plane
      // whatever PlanarConfiguration says (PS3.5 G.2; pydicom and DCMTK read it so); the
      // renderer follows PlanarConfiguration, so it is set to what the decoded frame is.
      if (image.getTransferSyntaxUid() === "1.2.840.10008.1.2.5" && Number(all.SamplesPerPixel) === 3) image.setElement("PlanarConfiguration", "1");
      // A plane-interleaved JPEG-LS colour frame (ILV 0) is decoded plane by plane too: before,
      // pydicom-data's JLSL_RGB_ILV0 came out as grey-green noise.
      if (Number(all.SamplesPerPixel) === 3) {
        const fragments = Array.isArray(all.PixelData) ? all.PixelData : [all.PixelData];
        const stream = fragments.map(valueBytes).find((b) => b && b.length > 4 && b[0] === 0xff && b[1] === 0xd8);
        const planes = jpegLsPlaneInterleaved(image.getTransferSyntaxUid(), stream);
        if (planes !== undefined) image.setElement("PlanarConfiguration", planes ? 1 : 0);
      }
      currentPhotometric = typeof all.PhotometricInterpretation === "string" ? all.PhotometricInterpretation : "";
      const warnings = [];
      if (all.PhotometricInterpretation === "PALETTE COLOR") expandSegmentedPalette(image, all);
      if (all.ModalityLUTSequence !== undefined) warnings.push(...applyModalityLut(image, all));
      narrowWideColour(image, all);
      if (Number(all.SamplesPerPixel) === 3) {
        const fragments = Array.isArray(all.PixelData) ? all.PixelData : [all.PixelData];
        const firstCodestream = fragments.map(valueBytes).find((b) => b && b.length > 4 && b[0] === 0xff && b[1] === 0x4f);
        const labelled = all.PhotometricInterpretation;
        const read = j2kPhotometric(image.getTransferSyntaxUid(), labelled, firstCodestream);
        if (read !== labelled) {
          image.setElement("PhotometricInterpretation", read);
          warnings.push(`labelled ${labelled}, but its JPEG 2000 codestream applies a component transform, which the codec undoes; read as RGB`);
        }
      }
      const elements = {};
      for (const name of job.attributes) {
        const v = plain(all[name]);
        if (v !== undefined) elements[name] = v;
      }
      const frameCount = Math.min(Math.max(1, Number(all.NumberOfFrames) || 1), MAX_POSITIONS);
      const frameWindows = Array.from({ length: frameCount }, (_, k) => frameValues(all, k).window);
      const contents = Array.from({ length: frameCount }, (_, k) => frameContent(all, k));
      reply({
        id: job.id,
        ok: true,
        elements,
        ...(all.SOPClassUID === WSI_SOP_CLASS ? { slide: slideHeader(all) } : {}),
        hasPixelData: all.PixelData !== undefined,
        floatPixelData: all.FloatPixelData !== undefined ? "float" : all.DoubleFloatPixelData !== undefined ? "double" : null,
        pixelBytes: pixelBytes(all.PixelData),
        transferSyntaxUid: image.getTransferSyntaxUid(),
        frameWindows: frameWindows.some((w) => w !== null) ? frameWindows.map((w) => (w ? [w.center, w.width, w.fromFunctionalGroups ? 1 : 0] : null)) : null,
        frameContents: contents.some((c) => c !== null) ? contents : null,
        warnings,
      });
    } else if (job.op === "render") {
      const frames = [];
      for (const item of job.items) {
        let r;
        let scale;
        if (item.values) {
          try {
            const values = storedValues(item.frame);
            frames.push({ width: values.columns, height: values.rows, pixels: values.buffer, window: null });
            continue;
          } catch (e) {
            reply({ id: job.id, ok: false, frame: item.frame, error: message(e) });
            return;
          }
        }
        try {
          // An enhanced object's rescale lives in its functional groups, per frame where they differ.
          const values = frameValues(current.getElements(), item.frame);
          scale = rendererScale(values);
          current.setElement("RescaleSlope", scale.slope);
          current.setElement("RescaleIntercept", scale.intercept);
          const window = item.window ? scale.toRenderer(item.window) : null;
          r = current.render({ frame: item.frame, renderOverlays: false, ...(window ? { windowLevel: new WindowLevel(window.width, window.center) } : {}) });
        } catch (e) {
          if (e instanceof WebAssembly.RuntimeError) trapped = true;
          reply({ id: job.id, ok: false, frame: item.frame, error: message(e) });
          return;
        }
        // A frame of one value has no range to window by: the renderer widens its zero-width
        // window to 1 centred on the value (a frame of two neighbouring values gets one centred
        // half-way), which paints the frame white. It is drawn black, as readers draw an empty frame.
        if (!item.window && r.windowLevel && r.windowLevel.getWindow() <= 1 && Number.isInteger(r.windowLevel.getLevel()) && currentPhotometric !== "MONOCHROME1") {
          const level = r.windowLevel.getLevel();
          r = current.render({ frame: item.frame, renderOverlays: false, windowLevel: new WindowLevel(1, level + 1) });
        }
        frames.push({ width: r.width, height: r.height, pixels: r.pixels, window: r.windowLevel ? scale.rangeFromRenderer({ center: r.windowLevel.getLevel(), width: r.windowLevel.getWindow() }) : null });
      }
      // Kept only when the caller has more frames to ask for (a whole slide's tiles, in batches).
      if (!job.more) {
        current = null;
        compressedLut = null;
      }
      reply({ id: job.id, ok: true, frames }, frames.map((f) => f.pixels));
    }
  } catch (e) {
    current = null;
    compressedLut = null;
    reply({ id: job.id, ok: false, error: message(e) });
  }
});
