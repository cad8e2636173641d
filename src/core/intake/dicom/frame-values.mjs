// What the decode worker (render-worker.mjs) reads from a DICOM header beyond what
// dcmjs-imaging reads itself: the functional groups of enhanced multi-frame objects, the
// colour transform of a JPEG codestream, and segmented palette lookup tables. Plain
// JavaScript, as the worker is; every function is pure and bounded by its input.

/** A sequence's first item (dcmjs gives a sequence as an array, a one-item one sometimes as the item). */
export function firstItem(v) {
  return Array.isArray(v) ? v[0] : v && typeof v === "object" ? v : undefined;
}

function num(v) {
  const x = Array.isArray(v) ? v[0] : v;
  const n = typeof x === "string" ? Number(x) : x;
  return typeof n === "number" && Number.isFinite(n) ? n : undefined;
}

/**
 * A functional group macro of frame `k` (0-based): the Per-frame Functional Groups' item when
 * the frame carries the macro, else the Shared Functional Groups' (PS3.3 C.7.6.16).
 */
export function frameMacro(all, k, name) {
  // An item per frame, or the sequence cannot say which frame an item belongs to (dcmjs drops empty items).
  const items = all.PerFrameFunctionalGroupsSequence;
  const frames = Math.max(1, Number(all.NumberOfFrames) || 1);
  const perFrame = Array.isArray(items) && items.length === frames ? items[k] : undefined;
  return firstItem(perFrame?.[name]) ?? firstItem(firstItem(all.SharedFunctionalGroupsSequence)?.[name]);
}

/**
 * Frame `k`'s pixel value transformation and VOI window, as the standard reads them: the
 * functional groups of an enhanced object first (Pixel Value Transformation, Frame VOI LUT),
 * then the top-level attributes a classic object carries.
 */
export function frameValues(all, k) {
  const pvt = frameMacro(all, k, "PixelValueTransformationSequence");
  const voi = frameMacro(all, k, "FrameVOILUTSequence");
  const slope = num(pvt?.RescaleSlope) ?? num(all.RescaleSlope);
  const intercept = num(pvt?.RescaleIntercept) ?? num(all.RescaleIntercept);
  const center = num(voi?.WindowCenter) ?? num(all.WindowCenter);
  const width = num(voi?.WindowWidth) ?? num(all.WindowWidth);
  return {
    slope: slope ?? 1,
    intercept: intercept ?? 0,
    window: center !== undefined && width !== undefined && width >= 1 ? { center, width, fromFunctionalGroups: num(voi?.WindowWidth) !== undefined } : null,
  };
}

/**
 * The rescale handed to the renderer for a frame, and how windows cross between its units and
 * the frame's rescaled ones. dcmjs-imaging replaces a RescaleSlope under 0.1 by 1 (dividing the
 * intercept by the old slope), so it windows such a frame in stored units, not in the object's:
 * a PET in SUV (slopes of 1e-4 are usual) would be windowed ×10,000 off. So a slope
 * in (0, 0.1) is handed over as 1 with intercept/slope (values u = v / slope), and a window in
 * the object's units (v) is carried across exactly: the DICOM linear function
 * ((v − (c − 0.5)) / (w − 1) + 0.5) is unchanged when (c − 0.5) and (w − 1) are divided by the
 * slope too. A range the renderer chose itself (centre ± width / 2 in u) comes back in v.
 */
export function rendererScale({ slope, intercept }) {
  if (!(slope > 0 && slope < 0.1)) return { slope, intercept, toRenderer: (w) => w, rangeFromRenderer: (w) => w };
  return {
    slope: 1,
    intercept: intercept / slope,
    toRenderer: ({ center, width }) => ({ center: (center - 0.5) / slope + 0.5, width: (width - 1) / slope + 1 }),
    rangeFromRenderer: ({ center, width }) => ({ center: center * slope, width: width * slope }),
  };
}

/**
 * Where frame `k` sits in an enhanced object, from its Frame Content (PS3.3 C.7.6.16.2.2): the
 * stack and position within it, or the temporal position — words for the frame's caption
 * ("stack 1, position 5"), or null when the object says nothing.
 */
export function frameContent(all, k) {
  const c = frameMacro(all, k, "FrameContentSequence");
  if (!c) return null;
  const parts = [];
  const stack = typeof c.StackID === "string" ? c.StackID.slice(0, 16) : undefined;
  const position = num(c.InStackPositionNumber);
  const temporal = num(c.TemporalPositionIndex);
  if (stack !== undefined) parts.push(`stack ${stack}`);
  if (position !== undefined) parts.push(`position ${position}`);
  if (temporal !== undefined) parts.push(`time point ${temporal}`);
  return parts.length ? parts.join(", ") : null;
}

/** Bytes of a DICOM OB/OW value as dcmjs gives it (an ArrayBuffer, a view, or an array of them). */
export function valueBytes(v) {
  const part = Array.isArray(v) ? v.find((p) => p instanceof ArrayBuffer || ArrayBuffer.isView(p)) : v;
  if (part instanceof ArrayBuffer) return new Uint8Array(part);
  if (ArrayBuffer.isView(part)) return new Uint8Array(part.buffer, part.byteOffset, part.byteLength);
  return undefined;
}

/**
 * The Modality LUT Sequence's first item as a lookup (PS3.3 C.11.1): stored value → output
 * value, clamped to the table's ends; undefined when the object has none or it is unusable.
 */
export function modalityLut(all) {
  const item = firstItem(all.ModalityLUTSequence);
  if (!item) return undefined;
  const d = item.LUTDescriptor;
  const entries = (num(Array.isArray(d) ? d[0] : undefined) || 65536);
  const firstMapped = num(Array.isArray(d) ? d[1] : undefined) ?? 0;
  const bits = num(Array.isArray(d) ? d[2] : undefined) ?? 16;
  const bytes = valueBytes(item.LUTData);
  let table;
  if (bytes && bytes.length >= entries * 2 && bits > 8) table = new Uint16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + entries * 2));
  else if (bytes && bytes.length >= entries) table = bits > 8 ? undefined : Uint8Array.from(bytes.subarray(0, entries));
  else if (Array.isArray(item.LUTData) && item.LUTData.length >= entries && item.LUTData.every((x) => typeof x === "number")) table = Uint16Array.from(item.LUTData.slice(0, entries));
  if (!table || table.length === 0) return undefined;
  return { table, firstMapped, bits };
}

/**
 * A segmented palette colour lookup table (PS3.3 C.7.9.2) expanded into its entries: discrete
 * segments copy values, linear segments ramp from the previous value, indirect segments repeat
 * earlier ones. Bounded: at most `entries` values are produced, an indirect segment may not
 * point at another indirect one, and a malformed table ends the expansion (the renderer then
 * refuses the object for missing LUT data rather than reading past it).
 */
export function expandSegmentedLut(words, entries) {
  const out = new Uint16Array(entries);
  let n = 0;
  const run = (start, segments, nested) => {
    let p = start;
    for (let s = 0; s < segments && p < words.length && n < entries; s++) {
      const op = words[p];
      const len = words[p + 1] ?? 0;
      if (op === 0) {
        for (let i = 0; i < len && n < entries && p + 2 + i < words.length; i++) out[n++] = words[p + 2 + i];
        p += 2 + len;
      } else if (op === 1) {
        const y0 = n > 0 ? out[n - 1] : 0;
        const y1 = words[p + 2] ?? y0;
        for (let i = 1; i <= len && n < entries; i++) out[n++] = Math.round(y0 + ((y1 - y0) * i) / len);
        p += 3;
      } else if (op === 2 && !nested) {
        const offset = (words[p + 2] ?? 0) | ((words[p + 3] ?? 0) << 16);
        run(offset, len, true);
        p += 4;
      } else return false;
    }
    return true;
  };
  run(0, Infinity, false);
  return n === entries ? out : null;
}

/** JPEG 2000 and HTJ2K transfer syntaxes. */
const J2K_SYNTAXES = new Set(["1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.91", "1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.202", "1.2.840.10008.1.2.4.203"]);

/**
 * Whether a JPEG 2000 codestream applies a multiple component transform (its COD segment's
 * MCT byte, ISO 15444-1 A.6.1): true, false, or undefined when `bytes` holds no readable main header.
 */
export function j2kComponentTransform(bytes) {
  const find = (a, b, from) => {
    for (let i = from; i + 1 < bytes.length && i < 64 * 1024; i++) if (bytes[i] === a && bytes[i + 1] === b) return i;
    return -1;
  };
  const siz = find(0xff, 0x51, 0);
  if (siz === -1 || siz + 4 > bytes.length) return undefined;
  const cod = find(0xff, 0x52, siz + 2 + ((bytes[siz + 2] << 8) | bytes[siz + 3]));
  if (cod === -1 || cod + 8 >= bytes.length) return undefined;
  return bytes[cod + 8] === 1;
}

/**
 * The photometric interpretation a JPEG 2000 object's frames are rendered with: a stream with
 * a multiple component transform is turned back into RGB by the codec itself (PS3.5 A.4.4:
 * such objects are labelled YBR_ICT or YBR_RCT), so one labelled YBR_FULL or YBR_FULL_422 (a
 * writer's error) must not be converted from YCbCr a second time; it is read as RGB.
 */
export function j2kPhotometric(tsUid, photometric, firstCodestream) {
  if (!J2K_SYNTAXES.has(tsUid) || !/^YBR_FULL/.test(photometric ?? "") || !firstCodestream) return photometric;
  return j2kComponentTransform(firstCodestream) === true ? "RGB" : photometric;
}

/**
 * Whether a JPEG codestream of three components holds YCbCr that the decoder must turn into
 * RGB, by the rules mature readers follow (PS3.5 8.2.1; libjpeg's markers, pydicom, GDCM):
 * an Adobe APP14 marker says it outright (transform 0: RGB; 1: YCbCr); a JFIF APP0 marker
 * means YCbCr; component ids 'R','G','B' mean RGB; otherwise the DICOM header decides —
 * RGB is not transformed, YBR_* is. So a stream labelled RGB without markers is never
 * converted, and a YCbCr stream with JFIF or APP14 under an RGB label is (the writer's error).
 */
export function jpegHoldsYcbcr(bytes, photometric) {
  let p = 2;
  let jfif = false;
  let adobe;
  let ids;
  if (!(bytes[0] === 0xff && bytes[1] === 0xd8)) return undefined;
  while (p + 4 <= bytes.length) {
    if (bytes[p] !== 0xff) return undefined;
    const marker = bytes[p + 1];
    if (marker === 0xff) { p++; continue; }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) { p += 2; continue; }
    const len = (bytes[p + 2] << 8) | bytes[p + 3];
    const seg = p + 4;
    if (marker === 0xe0 && len >= 7 && String.fromCharCode(...bytes.subarray(seg, seg + 5)) === "JFIF\0") jfif = true;
    if (marker === 0xee && len >= 14 && String.fromCharCode(...bytes.subarray(seg, seg + 5)) === "Adobe") adobe = bytes[seg + 11];
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof && len >= 8) {
      const nf = bytes[seg + 5];
      ids = Array.from({ length: nf }, (_, i) => bytes[seg + 6 + i * 3]);
    }
    if (marker === 0xda) break;
    p += 2 + len;
  }
  if (!ids || ids.length !== 3) return undefined;
  if (adobe !== undefined) return adobe !== 0;
  if (jfif) return true;
  if (ids[0] === 0x52 && ids[1] === 0x47 && ids[2] === 0x42) return false;
  return String(photometric ?? "").startsWith("YBR");
}

/**
 * Colour samples of more than 8 bits as the 8-bit samples a picture holds: each little endian
 * sample of `bytesPerSample` bytes shifted down to its top 8 stored bits (how DCMTK and
 * pydicom-based viewers display 16- and 32-bit RGB). The renderer reads colour frames as
 * bytes, so without this a 16-bit RGB frame is read as twice as many 8-bit samples.
 */
export function narrowSamples(bytes, bytesPerSample, bitsStored) {
  const count = Math.floor(bytes.length / bytesPerSample);
  const out = new Uint8Array(count);
  const shift = Math.max(0, Math.min(bitsStored, bytesPerSample * 8) - 8);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) {
    const v = bytesPerSample === 2 ? view.getUint16(i * 2, true) : bytesPerSample === 4 ? view.getUint32(i * 4, true) : bytes[i * bytesPerSample];
    out[i] = Math.min(255, Math.floor(v / 2 ** shift));
  }
  return out;
}

/**
 * Greyscale stored values mapped through a Modality LUT in place: each sample of a decoded
 * 16-bit frame (little endian, `bitsStored` bits, two's complement when `signed`) replaced
 * by its table entry, clamped to the table's ends (PS3.3 C.11.1).
 */
export function mapThroughModalityLut(bytes, lut, bitsStored, signed) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = Math.floor(bytes.byteLength / 2);
  const mask = bitsStored >= 16 ? 0xffff : (1 << bitsStored) - 1;
  const last = lut.table.length - 1;
  const firstMapped = signed && lut.firstMapped > 32767 ? lut.firstMapped - 65536 : lut.firstMapped;
  for (let i = 0; i < count; i++) {
    let v = view.getUint16(i * 2, true) & mask;
    if (signed && v & (1 << (bitsStored - 1))) v -= 1 << bitsStored;
    view.setUint16(i * 2, lut.table[Math.min(last, Math.max(0, v - firstMapped))], true);
  }
}

/** JPEG-LS transfer syntaxes (lossless and near-lossless). */
const JPEG_LS_SYNTAXES = new Set(["1.2.840.10008.1.2.4.80", "1.2.840.10008.1.2.4.81"]);

/**
 * Whether a JPEG-LS colour codestream is plane-interleaved (ILV 0, ISO 14495-1 C.2.3: one scan
 * per component): CharLS then hands the frame over plane by plane, whatever the header's
 * PlanarConfiguration says (pydicom reads such frames as planes too). True, false, or
 * undefined when `bytes` holds no readable JPEG-LS header; only for the JPEG-LS syntaxes.
 */
export function jpegLsPlaneInterleaved(tsUid, bytes) {
  if (!JPEG_LS_SYNTAXES.has(tsUid) || !bytes || !(bytes[0] === 0xff && bytes[1] === 0xd8)) return undefined;
  let p = 2;
  while (p + 4 <= bytes.length && p < 64 * 1024) {
    if (bytes[p] !== 0xff) return undefined;
    const marker = bytes[p + 1];
    if (marker === 0xff) { p++; continue; }
    const len = (bytes[p + 2] << 8) | bytes[p + 3];
    if (marker === 0xda) {
      const ns = bytes[p + 4];
      const ilv = bytes[p + 5 + ns * 2 + 1];
      return ilv === undefined ? undefined : ilv === 0;
    }
    p += 2 + len;
  }
  return undefined;
}

/**
 * A JPEG-LS codestream with zero bytes between its entropy-coded data and EOI left out. The
 * old encoder that wrote NEMA WG-04's JPEG-LS set put one there (MR1_JLSL ends `2B 00 FF D9`;
 * CharLS's own encoding of the same pixels ends `2B FF D9`, byte for byte the same before it).
 * ISO 14495-1 allows no such fill: CharLS from 2.3 on (dcmjs-imaging carries 2.3.4) stops at
 * it with "the leading start byte (0xFF) for a JPEG marker was not found", where CharLS 2.2,
 * DCMTK's dcmdjpls and pydicom's decoders read the file (team-charls/charls issues #365, #437).
 * A stream's last data byte may itself be zero (CharLS needs it: a DCMTK-encoded CT ends so),
 * so the renderer tries this only after the stream as stored has failed. A zero byte right
 * after 0xFF is kept (entropy-coded data after a stuffed 0xFF). The DICOM fragment's own
 * padding after EOI is left as it is. `bytes` itself when nothing is cut.
 */
export function jpegLsWithoutFillBeforeEoi(bytes) {
  let end = bytes.length;
  while (end > 2 && bytes[end - 1] === 0) end--;
  if (end < 4 || bytes[end - 2] !== 0xff || bytes[end - 1] !== 0xd9) return bytes;
  const eoi = end - 2;
  let data = eoi;
  while (data > 0 && bytes[data - 1] === 0) data--;
  if (data === eoi || data === 0 || bytes[data - 1] === 0xff) return bytes;
  const out = new Uint8Array(bytes.length - (eoi - data));
  out.set(bytes.subarray(0, data), 0);
  out.set(bytes.subarray(eoi), data);
  return out;
}
