/**
 * A whole-slide instance's DICOM JSON metadata read as it arrives (WsiMetadataReader): the
 * summary it keeps describes the same pyramid as the whole answer parsed at once, whatever the
 * chunking, and holds only what the reader needs, not the answer.
 */
import { describe, expect, it } from "vitest";
import type { QidoItem } from "../../../../src/core/intake/dicom/dicomweb.js";
import { WsiMetadataReader, type SlideInstanceHeader } from "../../../../src/core/intake/dicom/wsi-metadata.js";
import { pyramidLevels, wsiOptics } from "../../../../src/core/intake/dicom/wsi-levels.js";

const v = (...x: unknown[]) => ({ Value: x });

/** A TILED_SPARSE level of 8 × 6 tiles of 256², each frame placed, with optics and a large ICC profile and private padding. */
function sparseLevel(): QidoItem {
  const across = 8;
  const perFrame = Array.from({ length: 48 }, (_, k) => ({
    "00209111": v({ "00209157": v(k + 1) }),
    "0048021A": v({ "0048021E": { vr: "SL", Value: [(k % across) * 256 + 1] }, "0048021F": { vr: "SL", Value: [Math.floor(k / across) * 256 + 1] }, "0040072A": v(0.5) }),
  }));
  return {
    "00080008": v("DERIVED", "PRIMARY", "VOLUME", "NONE"),
    "00480006": { vr: "UL", Value: [2048] },
    "00480007": { vr: "UL", Value: [1536] },
    "00280011": { vr: "US", Value: [256] },
    "00280010": { vr: "US", Value: [256] },
    "00280008": { vr: "IS", Value: ["48"] },
    "00280002": v(3),
    "00280100": v(8),
    "00280004": v("YBR_FULL_422"),
    "00209311": v("TILED_SPARSE"),
    "52009229": v({ "00289110": v({ "00280030": { vr: "DS", Value: ["0.00025", "0.00025"] }, "00180050": v(1) }) }),
    "52009230": { vr: "SQ", Value: perFrame },
    "00480105": v({ "00282000": { vr: "OB", InlineBinary: Buffer.alloc(600_000, 7).toString("base64") }, "00480106": v("1"), "00480107": v("Hämatoxylin und Eosin — brightfield"), "00220016": v({ "00080104": v("Brightfield illumination") }) }),
    "00091010": { vr: "LT", Value: ["x".repeat(2_000_000)] },
  };
}

function readInChunks(text: string, size: number): SlideInstanceHeader {
  const bytes = Buffer.from(text, "utf8");
  const r = new WsiMetadataReader();
  for (let at = 0; at < bytes.length; at += size) r.write(bytes.subarray(at, at + size));
  return r.end();
}

describe("whole-slide metadata read as it arrives", () => {
  const whole = sparseLevel();
  const answer = JSON.stringify([whole]);

  it("gives the pyramid and optics the whole answer gives, in any chunking (multi-byte characters split included)", () => {
    const expected = pyramidLevels([{ uid: "1.2", meta: whole }]);
    for (const size of [1, 7, 4096, 65536]) {
      // One byte at a time would take long on 2.6 MB: the padding is left out for it.
      const text = size === 1 ? JSON.stringify([{ ...whole, "00091010": undefined, "00480105": v({ "00480107": v("Hämatoxylin") }) }]) : answer;
      const got = readInChunks(text, size);
      expect(pyramidLevels([{ uid: "1.2", ...got }]), `chunks of ${size}`).toEqual(expected);
      if (size !== 1) expect(wsiOptics([got.meta])).toEqual(wsiOptics([whole]));
      else expect(wsiOptics([got.meta]).opticalPaths).toEqual([{ description: "Hämatoxylin" }]);
    }
    expect(expected[0]!.tiles).toHaveLength(48);
    expect(expected[0]!.pixelSpacingMm).toEqual([0.00025, 0.00025]);
  });

  it("keeps a few hundred bytes and two int32 per frame, not the answer (2.6 MB here)", () => {
    const got = readInChunks(answer, 65536);
    expect(answer.length).toBeGreaterThan(2_500_000);
    expect(JSON.stringify(got.meta).length).toBeLessThan(1000);
    expect(got.positions).toBeInstanceOf(Int32Array);
    expect(got.positions!.length).toBe(96);
  });

  it("frames without positions (TILED_FULL) are not listed; only the attributes read are kept", () => {
    const full = { ...whole, "00209311": v("TILED_FULL"), "52009230": { vr: "SQ", Value: Array.from({ length: 48 }, (_, k) => ({ "00209111": v({ "00209157": v(k + 1) }) })) } };
    const got = readInChunks(JSON.stringify([full]), 4096);
    expect(got.positions).toBeUndefined();
    const [level] = pyramidLevels([{ uid: "1.3", ...got }]);
    expect(level!.tiles).toHaveLength(0);
    expect(level!.grid).toEqual([{ instance: "1.3", first: 0, frames: 48 }]);
  });

  it("a position that is not a whole number is refused as outside the matrix, as it was before streaming", () => {
    const odd = { ...whole, "52009230": { vr: "SQ", Value: [{ "0048021A": v({ "0048021E": v(1.5), "0048021F": v(1) }) }] } };
    const got = readInChunks(JSON.stringify([odd]), 4096);
    expect(() => pyramidLevels([{ uid: "1.4", ...got }])).toThrow(/outside its total pixel matrix/);
  });
});
