/**
 * The picture size a compressed frame's own codestream declares, read from its first marker
 * segments only: JPEG 2000 and HTJ2K from SIZ, JPEG (baseline, extended, lossless) from its
 * SOF, JPEG-LS from SOF55. A codec allocates by these, not by the DICOM header, so they are
 * checked against the header (and so the pixel limit) before any codec runs.
 */
export interface DeclaredSize {
  codec: "JPEG 2000" | "JPEG" | "JPEG-LS";
  width: number;
  height: number;
  components: number;
}

/** Bytes searched for a JPEG 2000 codestream inside a JP2 wrapper. */
const JP2_SEARCH = 64 * 1024;

/** The size `fragment` declares, when it starts a codestream; null when it does not (a continuation fragment). */
export function declaredCodestreamSize(fragment: Buffer): DeclaredSize | null {
  if (fragment.length >= 4 && fragment[0] === 0xff && fragment[1] === 0x4f && fragment[2] === 0xff && fragment[3] === 0x51) return siz(fragment, 2);
  // A JP2 file (signature box) instead of a bare codestream: its codestream box holds the SIZ.
  if (fragment.length >= 12 && fragment.readUInt32BE(0) === 12 && fragment.toString("latin1", 4, 8) === "jP  ") {
    const at = fragment.subarray(0, JP2_SEARCH).indexOf(Buffer.from([0xff, 0x4f, 0xff, 0x51]));
    return at === -1 ? { codec: "JPEG 2000", width: 0, height: 0, components: 0 } : siz(fragment, at + 2);
  }
  if (fragment.length >= 2 && fragment[0] === 0xff && fragment[1] === 0xd8) return sof(fragment);
  return null;
}

/** SIZ: Lsiz Rsiz Xsiz Ysiz XOsiz YOsiz XTsiz YTsiz XTOsiz YTOsiz Csiz (ISO 15444-1 A.5.1). */
function siz(b: Buffer, at: number): DeclaredSize {
  if (at + 40 > b.length) return { codec: "JPEG 2000", width: 0, height: 0, components: 0 };
  const x = b.readUInt32BE(at + 6);
  const y = b.readUInt32BE(at + 10);
  const xo = b.readUInt32BE(at + 14);
  const yo = b.readUInt32BE(at + 18);
  return { codec: "JPEG 2000", width: Math.max(0, x - xo), height: Math.max(0, y - yo), components: b.readUInt16BE(at + 38) };
}

const SOF = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

/** The first SOFn (or JPEG-LS SOF55) after SOI: P, Y, X, Nf (ISO 10918-1 B.2.2). */
function sof(b: Buffer): DeclaredSize {
  let pos = 2;
  while (pos + 4 <= b.length) {
    if (b[pos] !== 0xff) break;
    const marker = b[pos + 1]!;
    if (marker === 0xff) {
      pos += 1; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      pos += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) break; // scan or end before any frame header
    const len = b.readUInt16BE(pos + 2);
    if ((SOF.has(marker) || marker === 0xf7) && pos + 10 <= b.length) {
      return { codec: marker === 0xf7 ? "JPEG-LS" : "JPEG", height: b.readUInt16BE(pos + 5), width: b.readUInt16BE(pos + 7), components: b[pos + 9]! };
    }
    pos += 2 + len;
  }
  return { codec: "JPEG", width: 0, height: 0, components: 0 };
}
