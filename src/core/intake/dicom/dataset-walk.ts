/**
 * A bounded walk over a DICOM Part 10 file's structure, before any library parses it: every
 * element and item is counted, sequence nesting is measured, lengths are checked against the
 * file, and the fragments of encapsulated pixel data are located (so their codestream headers
 * can be checked before a codec runs). The walk reads tags and lengths only — no value is
 * decoded — and stops at the first limit, so a hostile header costs at most `maxElements` steps.
 *
 * It also does what pydicom and DCMTK do for a common writer's error: when a dataset under an
 * explicit-VR transfer syntax does not start with a valid VR, it is read as implicit VR, and
 * `implicitVrMislabelled` says so.
 */

export interface WalkLimits {
  /** Elements and items together. */
  maxElements: number;
  /** Sequences within sequences. */
  maxDepth: number;
}

/** Real objects stay far below these: an enhanced multi-frame header has some tens of thousands of elements, nesting a handful deep. */
export const DEFAULT_WALK_LIMITS: WalkLimits = { maxElements: 100_000, maxDepth: 32 };

export interface DatasetShape {
  transferSyntaxUid: string;
  /** Where the dataset starts (after the preamble and the file meta group). */
  datasetStart: number;
  /** An explicit-VR transfer syntax whose dataset is written in implicit VR. */
  implicitVrMislabelled: boolean;
  /** The encapsulated pixel data's fragments (the basic offset table left out); empty when native. */
  fragments: Array<{ offset: number; length: number }>;
  /**
   * Top-level private elements read as sequences without a VR to say so (UN, or implicit VR)
   * that hold encapsulated pixel data — a GE icon in (0009,1110) after a PACS forgot its VR.
   * The parser loses its way in them; they are left out before parsing (renderDicom).
   */
  hiddenIcons: Array<{ start: number; end: number; tag: string }>;
  elements: number;
  depth: number;
}

export class DatasetShapeError extends Error {
  constructor(
    readonly kind: "depth" | "elements" | "truncated" | "malformed",
    message: string,
  ) {
    super(message);
  }
}

export const IMPLICIT_LE = "1.2.840.10008.1.2";
export const EXPLICIT_LE = "1.2.840.10008.1.2.1";
export const DEFLATED_LE = "1.2.840.10008.1.2.1.99";
export const EXPLICIT_BE = "1.2.840.10008.1.2.2";

const LONG_VRS = new Set(["OB", "OD", "OF", "OL", "OV", "OW", "SQ", "SV", "UC", "UN", "UR", "UT", "UV"]);
const VRS = new Set([...LONG_VRS, "AE", "AS", "AT", "CS", "DA", "DS", "DT", "FL", "FD", "IS", "LO", "LT", "PN", "SH", "SL", "SS", "ST", "TM", "UI", "UL", "US"]);
const UNDEFINED = 0xffffffff;

const hex = (n: number) => n.toString(16).toUpperCase().padStart(4, "0");
const tagName = (g: number, e: number) => `(${hex(g)},${hex(e)})`;

/** The file meta group (always explicit VR little endian): where it ends and the transfer syntax. */
export function readFileMeta(buf: Buffer): { end: number; transferSyntaxUid: string; elements: Array<{ tag: number; start: number; end: number }> } {
  let pos = 132;
  let ts = "";
  const elements: Array<{ tag: number; start: number; end: number }> = [];
  while (pos + 8 <= buf.length && buf.readUInt16LE(pos) === 0x0002) {
    const element = buf.readUInt16LE(pos + 2);
    const vr = buf.toString("latin1", pos + 4, pos + 6);
    const long = LONG_VRS.has(vr);
    const len = long ? buf.readUInt32LE(pos + 8) : buf.readUInt16LE(pos + 6);
    const valueAt = pos + (long ? 12 : 8);
    if (!VRS.has(vr) || valueAt + len > buf.length) throw new DatasetShapeError("malformed", `the file meta element ${tagName(2, element)} is malformed`);
    if (element === 0x0010) ts = buf.toString("latin1", valueAt, valueAt + len).replace(/[\0 ]+$/, "");
    elements.push({ tag: element, start: pos, end: valueAt + len });
    pos = valueAt + len;
  }
  if (!ts) throw new DatasetShapeError("malformed", "the file meta group has no TransferSyntaxUID");
  return { end: pos, transferSyntaxUid: ts, elements };
}

/**
 * The same file with another transfer syntax in its meta group and `dataset` after it: for a
 * deflated object once inflated, and for an implicit-VR dataset labelled explicit.
 */
export function withTransferSyntax(buf: Buffer, transferSyntaxUid: string, dataset: Buffer): Buffer {
  const meta = readFileMeta(buf);
  const ts = Buffer.from(transferSyntaxUid.length % 2 ? `${transferSyntaxUid}\0` : transferSyntaxUid, "latin1");
  const tsElement = Buffer.alloc(8 + ts.length);
  tsElement.writeUInt16LE(0x0002, 0);
  tsElement.writeUInt16LE(0x0010, 2);
  tsElement.write("UI", 4, "latin1");
  tsElement.writeUInt16LE(ts.length, 6);
  ts.copy(tsElement, 8);
  const kept = meta.elements.filter((e) => e.tag !== 0x0000 && e.tag !== 0x0010);
  const body = [...kept.filter((e) => e.tag < 0x0010).map((e) => buf.subarray(e.start, e.end)), tsElement, ...kept.filter((e) => e.tag > 0x0010).map((e) => buf.subarray(e.start, e.end))];
  const groupLength = Buffer.alloc(12);
  groupLength.writeUInt16LE(0x0002, 0);
  groupLength.writeUInt16LE(0x0000, 2);
  groupLength.write("UL", 4, "latin1");
  groupLength.writeUInt16LE(4, 6);
  groupLength.writeUInt32LE(body.reduce((n, b) => n + b.length, 0), 8);
  return Buffer.concat([buf.subarray(0, 132), groupLength, ...body, dataset]);
}

class Walker {
  elements = 0;
  depth = 0;
  fragments: Array<{ offset: number; length: number }> = [];
  hiddenIcons: Array<{ start: number; end: number; tag: string }> = [];
  /** Encapsulated pixel data found inside sequences so far. */
  private nestedEncapsulated = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly big: boolean,
    private readonly limits: WalkLimits,
  ) {}

  private u16(p: number): number {
    return this.big ? this.buf.readUInt16BE(p) : this.buf.readUInt16LE(p);
  }
  private u32(p: number): number {
    return this.big ? this.buf.readUInt32BE(p) : this.buf.readUInt32LE(p);
  }
  private count(): void {
    if (++this.elements > this.limits.maxElements) throw new DatasetShapeError("elements", `the header holds more than ${this.limits.maxElements} elements`);
  }
  private need(pos: number, n: number, what: string): void {
    if (pos + n > this.buf.length) throw new DatasetShapeError("truncated", `${what} needs ${n} bytes, but the file ends ${Math.max(0, this.buf.length - pos)} bytes later`);
  }

  /** Elements from `pos` to `end`, or (`delimited`) to an item delimiter; returns the position after. */
  dataset(pos: number, end: number, depth: number, implicit: boolean, delimited: boolean): number {
    while (delimited || pos < end) {
      if (!delimited && end === this.buf.length && pos + 8 > end) return end; // trailing padding
      this.need(pos, 8, "an element header");
      const group = this.u16(pos);
      const element = this.u16(pos + 2);
      if (group === 0xfffe) {
        if (element === 0xe00d && delimited) return pos + 8;
        throw new DatasetShapeError("malformed", `a delimiter ${tagName(group, element)} stands where an element should`);
      }
      this.count();
      const start = pos;
      const nestedBefore = this.nestedEncapsulated;
      let vr: string | null = null;
      let len: number;
      if (implicit) {
        len = this.u32(pos + 4);
        pos += 8;
      } else {
        vr = this.buf.toString("latin1", pos + 4, pos + 6);
        if (!VRS.has(vr)) throw new DatasetShapeError("malformed", `element ${tagName(group, element)} has no valid VR`);
        if (LONG_VRS.has(vr)) {
          this.need(pos, 12, `element ${tagName(group, element)}`);
          len = this.u32(pos + 8);
          pos += 12;
        } else {
          len = this.u16(pos + 6);
          pos += 8;
        }
      }
      if (len === UNDEFINED) {
        // Encapsulated pixel data: the object's own (depth 0), or an icon's inside IconImageSequence,
        // which holds fragments, not items of a sequence.
        if (group === 0x7fe0 && element === 0x0010) pos = this.encapsulated(pos, depth === 0);
        // A sequence, or UN holding one (read as implicit VR little endian, PS3.5 6.2.2).
        else {
          pos = this.sequence(pos, UNDEFINED, depth + 1, implicit || vr === "UN");
          if (depth === 0 && group % 2 === 1 && (vr === "UN" || vr === null) && this.nestedEncapsulated > nestedBefore) this.hiddenIcons.push({ start, end: pos, tag: tagName(group, element) });
        }
        continue;
      }
      this.need(pos, len, `element ${tagName(group, element)}`);
      if (vr === "SQ") this.sequence(pos, len, depth + 1, implicit);
      else if (implicit && len >= 8 && this.u16(pos) === 0xfffe && this.u16(pos + 2) === 0xe000) this.maybeSequence(pos, len, depth + 1);
      pos += len;
    }
    return pos;
  }

  /** Implicit VR gives no VR: a value that starts with an item is walked as the sequence it most likely is. */
  private maybeSequence(pos: number, len: number, depth: number): void {
    try {
      this.sequence(pos, len, depth, true);
    } catch (e) {
      if (e instanceof DatasetShapeError && (e.kind === "depth" || e.kind === "elements")) throw e;
    }
  }

  private sequence(pos: number, len: number, depth: number, implicit: boolean): number {
    if (depth > this.limits.maxDepth) throw new DatasetShapeError("depth", `sequences are nested more than ${this.limits.maxDepth} deep`);
    this.depth = Math.max(this.depth, depth);
    const end = len === UNDEFINED ? Infinity : pos + len;
    while (pos < end) {
      this.need(pos, 8, "an item header");
      const group = this.u16(pos);
      const element = this.u16(pos + 2);
      const itemLen = this.u32(pos + 4);
      if (group === 0xfffe && element === 0xe0dd && len === UNDEFINED) return pos + 8;
      if (group !== 0xfffe || element !== 0xe000) throw new DatasetShapeError("malformed", `a sequence holds ${tagName(group, element)} where an item should be`);
      this.count();
      pos += 8;
      if (itemLen === UNDEFINED) pos = this.dataset(pos, Infinity, depth, implicit, true);
      else {
        this.need(pos, itemLen, "an item");
        this.dataset(pos, pos + itemLen, depth, implicit, false);
        pos += itemLen;
      }
    }
    return pos;
  }

  private encapsulated(pos: number, own: boolean): number {
    let first = true;
    for (;;) {
      this.need(pos, 8, "the pixel data's next fragment");
      const group = this.u16(pos);
      const element = this.u16(pos + 2);
      const len = this.u32(pos + 4);
      if (group === 0xfffe && element === 0xe0dd) return pos + 8;
      if (group !== 0xfffe || element !== 0xe000) throw new DatasetShapeError("malformed", `the encapsulated pixel data holds ${tagName(group, element)} where a fragment should be`);
      this.count();
      pos += 8;
      this.need(pos, len, "a pixel data fragment");
      if (!first && own) this.fragments.push({ offset: pos, length: len });
      if (first && !own) this.nestedEncapsulated++;
      first = false;
      pos += len;
    }
  }
}

/** The shape of a Part 10 file (not deflated: inflate it first) within `limits`. */
export function walkPart10(buf: Buffer, limits: WalkLimits = DEFAULT_WALK_LIMITS): DatasetShape {
  const meta = readFileMeta(buf);
  const ts = meta.transferSyntaxUid;
  let implicit = ts === IMPLICIT_LE;
  let mislabelled = false;
  // pydicom's and DCMTK's rule: an explicit-VR dataset whose first element has no valid VR is implicit.
  if (!implicit && buf.length >= meta.end + 6 && !VRS.has(buf.toString("latin1", meta.end + 4, meta.end + 6))) {
    implicit = true;
    mislabelled = true;
  }
  const walker = new Walker(buf, ts === EXPLICIT_BE && !mislabelled, limits);
  walker.dataset(meta.end, buf.length, 0, implicit, false);
  return { transferSyntaxUid: ts, datasetStart: meta.end, implicitVrMislabelled: mislabelled, fragments: walker.fragments, hiddenIcons: walker.hiddenIcons, elements: walker.elements, depth: walker.depth };
}

/**
 * A DICOM dataset written without the Part 10 preamble — its file meta group first, or (older
 * writers, ACR-NEMA style) its dataset straight away — as the Part 10 file DCMTK, GDCM and
 * pydicom (with force) read it as: the preamble and "DICM" put in front, and a file meta group
 * naming implicit or explicit VR little endian (whichever its first element is written in)
 * when it has none. Null unless the whole result walks as DICOM within `limits`, so other
 * bytes that merely start like an element are not taken for DICOM.
 */
export function part10FromBareDataset(buf: Buffer, limits: WalkLimits = DEFAULT_WALK_LIMITS): Buffer | null {
  if (buf.length < 16) return null;
  const group = buf.readUInt16LE(0);
  const explicit = VRS.has(buf.toString("latin1", 4, 6));
  let file: Buffer;
  if (group === 0x0002 && explicit) file = Buffer.concat([Buffer.alloc(128), Buffer.from("DICM", "latin1"), buf]);
  else if (group === 0x0008) {
    const ts = Buffer.from(explicit ? `${EXPLICIT_LE}\0` : `${IMPLICIT_LE}\0`, "latin1");
    const tsElement = Buffer.alloc(8);
    tsElement.writeUInt16LE(0x0002, 0);
    tsElement.writeUInt16LE(0x0010, 2);
    tsElement.write("UI", 4, "latin1");
    tsElement.writeUInt16LE(ts.length, 6);
    const groupLength = Buffer.alloc(12);
    groupLength.writeUInt16LE(0x0002, 0);
    groupLength.write("UL", 4, "latin1");
    groupLength.writeUInt16LE(4, 6);
    groupLength.writeUInt32LE(tsElement.length + ts.length, 8);
    file = Buffer.concat([Buffer.alloc(128), Buffer.from("DICM", "latin1"), groupLength, tsElement, ts, buf]);
  } else return null;
  try {
    walkPart10(file, limits);
    return file;
  } catch (e) {
    if (e instanceof DatasetShapeError) return null;
    throw e;
  }
}

/**
 * An implicit-VR little endian dataset (already walked within limits) rewritten in explicit VR
 * little endian, each element's VR from `vrOf` (the data dictionary; UN when unknown). For an
 * object whose transfer syntax says explicit VR but whose writer wrote implicit: the parser
 * then reads it by its own syntax, encapsulated pixel data included.
 */
export function implicitToExplicit(buf: Buffer, start: number, vrOf: (group: number, element: number) => string): Buffer {
  const header = (group: number, element: number, vr: string, len: number): Buffer => {
    const long = LONG_VRS.has(vr);
    const h = Buffer.alloc(long ? 12 : 8);
    h.writeUInt16LE(group, 0);
    h.writeUInt16LE(element, 2);
    h.write(vr, 4, "latin1");
    if (long) h.writeUInt32LE(len, 8);
    else h.writeUInt16LE(len, 6);
    return h;
  };
  const tag = (group: number, element: number, len: number): Buffer => {
    const h = Buffer.alloc(8);
    h.writeUInt16LE(group, 0);
    h.writeUInt16LE(element, 2);
    h.writeUInt32LE(len, 4);
    return h;
  };
  /** Elements from `pos` to `end` (or an item delimiter): their explicit bytes and where they stopped. */
  const dataset = (pos: number, end: number, delimited: boolean): { out: Buffer[]; next: number } => {
    const out: Buffer[] = [];
    while (delimited || pos < end) {
      if (!delimited && pos + 8 > end) break;
      const group = buf.readUInt16LE(pos);
      const element = buf.readUInt16LE(pos + 2);
      const len = buf.readUInt32LE(pos + 4);
      pos += 8;
      if (group === 0xfffe && element === 0xe00d) return { out, next: pos };
      let vr = vrOf(group, element);
      if (len === UNDEFINED) {
        if (group === 0x7fe0 && element === 0x0010) {
          // Encapsulated: fragments copied as they are, up to and including the sequence delimiter.
          let p = pos;
          for (;;) {
            const e = buf.readUInt16LE(p + 2);
            const l = buf.readUInt32LE(p + 4);
            p += 8 + (e === 0xe0dd ? 0 : l);
            if (e === 0xe0dd) break;
          }
          out.push(header(group, element, "OB", UNDEFINED), buf.subarray(pos, p));
          pos = p;
        } else {
          const s = sequence(pos, UNDEFINED);
          out.push(header(group, element, "SQ", UNDEFINED), ...s.out);
          pos = s.next;
        }
        continue;
      }
      if (vr === "SQ") {
        const s = sequence(pos, len);
        const body = Buffer.concat(s.out);
        out.push(header(group, element, "SQ", body.length), body);
      } else {
        if (!LONG_VRS.has(vr) && len > 0xffff) vr = "UN";
        out.push(header(group, element, vr, len), buf.subarray(pos, pos + len));
      }
      pos += len;
    }
    return { out, next: pos };
  };
  const sequence = (pos: number, len: number): { out: Buffer[]; next: number } => {
    const out: Buffer[] = [];
    const end = len === UNDEFINED ? Infinity : pos + len;
    while (pos < end) {
      const element = buf.readUInt16LE(pos + 2);
      const itemLen = buf.readUInt32LE(pos + 4);
      pos += 8;
      if (element === 0xe0dd) {
        out.push(tag(0xfffe, 0xe0dd, 0));
        return { out, next: pos };
      }
      const d = itemLen === UNDEFINED ? dataset(pos, Infinity, true) : dataset(pos, pos + itemLen, false);
      const body = Buffer.concat(d.out);
      out.push(tag(0xfffe, 0xe000, body.length), body);
      pos = itemLen === UNDEFINED ? d.next : pos + itemLen;
    }
    return { out, next: pos };
  };
  return Buffer.concat(dataset(start, buf.length, false).out);
}

/** Bytes a VR's values are made of, for byte order: 0 for text and bytes, which keep their order. */
const VALUE_UNIT: Record<string, number> = { US: 2, SS: 2, OW: 2, AT: 2, UL: 4, SL: 4, FL: 4, OF: 4, OL: 4, FD: 8, OD: 8, SV: 8, UV: 8, OV: 8 };

/**
 * An explicit-VR big endian dataset (already walked within limits) rewritten in explicit VR
 * little endian: every tag, length and numeric value swapped, text and OB/UN bytes kept. The
 * retired big endian syntax is read this way so that one reader handles every byte order:
 * dcmjs-imaging swaps only 16-bit pixel data, so 32-bit pixels, lookup tables (plain and
 * segmented palettes, Modality LUT Data) and 8-bit pixels in OW came out wrong. Pixel Data
 * is swapped by its own BitsAllocated (32-bit values as 32-bit; 8-bit samples in OW by
 * 16-bit words, PS3.5 8.1.1), as pydicom and DCMTK read it. Lengths do not change, so the
 * result is the same size.
 */
export function bigEndianToLittle(buf: Buffer, start: number): Buffer {
  const out = Buffer.from(buf.subarray(start));
  const at = (p: number) => p - start;
  const swapRun = (pos: number, len: number, unit: number) => {
    if (unit === 2) out.subarray(at(pos), at(pos) + (len & ~1)).swap16();
    else if (unit === 4) out.subarray(at(pos), at(pos) + (len & ~3)).swap32();
    else if (unit === 8) out.subarray(at(pos), at(pos) + (len & ~7)).swap64();
  };
  const header = (pos: number, long: boolean) => {
    swapRun(pos, 4, 2); // group, element
    if (long) swapRun(pos + 8, 4, 4);
    else swapRun(pos + 6, 2, 2);
  };
  const item = (pos: number) => {
    swapRun(pos, 4, 2);
    swapRun(pos + 4, 4, 4);
  };
  const dataset = (pos: number, end: number, delimited: boolean): number => {
    let bitsAllocated = 16;
    while (delimited || pos < end) {
      if (pos + 8 > buf.length) return buf.length;
      const group = buf.readUInt16BE(pos);
      const element = buf.readUInt16BE(pos + 2);
      if (group === 0xfffe) {
        item(pos);
        return pos + 8;
      }
      const vr = buf.toString("latin1", pos + 4, pos + 6);
      const long = LONG_VRS.has(vr);
      const len = long ? buf.readUInt32BE(pos + 8) : buf.readUInt16BE(pos + 6);
      header(pos, long);
      pos += long ? 12 : 8;
      if (group === 0x0028 && element === 0x0100 && len >= 2) bitsAllocated = buf.readUInt16BE(pos);
      if (len === UNDEFINED) {
        pos = group === 0x7fe0 && element === 0x0010 ? fragments(pos) : sequence(pos, UNDEFINED);
        continue;
      }
      if (vr === "SQ") sequence(pos, len);
      else if (group === 0x7fe0 && element === 0x0010) swapRun(pos, len, vr === "OB" ? 0 : Math.max(2, bitsAllocated / 8));
      else swapRun(pos, len, VALUE_UNIT[vr] ?? 0);
      pos += len;
    }
    return pos;
  };
  const sequence = (pos: number, len: number): number => {
    const end = len === UNDEFINED ? buf.length : pos + len;
    while (pos + 8 <= end) {
      const element = buf.readUInt16BE(pos + 2);
      const itemLen = buf.readUInt32BE(pos + 4);
      item(pos);
      pos += 8;
      if (element === 0xe0dd) return pos;
      if (itemLen === UNDEFINED) pos = dataset(pos, buf.length, true);
      else {
        dataset(pos, pos + itemLen, false);
        pos += itemLen;
      }
    }
    return pos;
  };
  const fragments = (pos: number): number => {
    while (pos + 8 <= buf.length) {
      const element = buf.readUInt16BE(pos + 2);
      const len = buf.readUInt32BE(pos + 4);
      item(pos);
      pos += 8;
      if (element === 0xe0dd) return pos;
      pos += len;
    }
    return pos;
  };
  dataset(start, buf.length, false);
  return out;
}

/** A VR from a data dictionary entry's VR (dcmjs writes "ox" for OB or OW, "xs" for US or SS), UN when unknown. */
export function explicitVr(dictionaryVr: string | undefined, group: number, element: number): string {
  if (element === 0x0000) return "UL"; // group length
  if (group % 2 === 1 && element >= 0x0010 && element <= 0x00ff) return "LO"; // private creator
  if (dictionaryVr === "ox") return "OW";
  if (dictionaryVr === "xs") return "US";
  return dictionaryVr && VRS.has(dictionaryVr) ? dictionaryVr : "UN";
}
