/**
 * The tokenizer of the whole-slide metadata reader builds only the first characters of a token
 * (capped-string.ts): a lying PACS's 7.5 MiB padded value is counted, never built as a string.
 */
import { Tokenizer } from "@streamparser/json";
import { describe, expect, it } from "vitest";
import { CappedString } from "../../../../src/core/intake/dicom/capped-string.js";
import { withCappedStrings, WsiMetadataReader } from "../../../../src/core/intake/dicom/wsi-metadata.js";
import { wsiOptics } from "../../../../src/core/intake/dicom/wsi-levels.js";

describe("a capped token accumulator", () => {
  it("builds at most its cap of characters and counts every byte", () => {
    const s = new CappedString(8);
    const chunk = Buffer.from("x".repeat(1024 * 1024));
    for (let k = 0; k < 8; k++) s.appendBuf(chunk);
    s.appendChar(0x79);
    s.appendCharCode(0x7a);
    expect(s.toString()).toBe("xxxxxxxx");
    expect(s.byteLength).toBe(8 * 1024 * 1024 + 1);
    s.reset();
    expect([s.toString(), s.byteLength]).toEqual(["", 0]);
  });

  it("never cuts a multi-byte character: the cap is cut back to the character's first byte", () => {
    const s = new CappedString(4);
    s.appendBuf(Buffer.from("abcä€"));
    expect(s.toString()).toBe("abc");
    const t = new CappedString(5);
    t.appendBuf(Buffer.from("ab"));
    t.appendBuf(Buffer.from("äöü"));
    expect(t.toString()).toBe("abä");
  });

  it("is what the metadata reader's tokenizer accumulates strings and numbers in (the replacement took)", () => {
    const t = withCappedStrings(new Tokenizer()) as unknown as { bufferedString: unknown; bufferedNumber: unknown };
    expect(t.bufferedString).toBeInstanceOf(CappedString);
    expect(t.bufferedNumber).toBeInstanceOf(CappedString);
  });

  it("the reader still keeps the first 200 characters of a long kept value, and reads past an 8 MB one it drops (its offsets counted right)", () => {
    const answer = JSON.stringify([
      {
        "00091010": { vr: "LT", Value: ["p".repeat(8_000_000)] },
        "00480105": { Value: [{ "00480107": { Value: ["é".repeat(5000)] }, "00480106": { Value: ["1"] } }] },
        "00280002": { Value: [1] },
      },
    ]);
    const r = new WsiMetadataReader();
    const bytes = Buffer.from(answer);
    for (let at = 0; at < bytes.length; at += 65536) r.write(bytes.subarray(at, at + 65536));
    const got = r.end();
    expect(wsiOptics([got.meta]).opticalPaths).toEqual([{ id: "1", description: "é".repeat(200) }]);
    expect(got.meta["00280002"]).toEqual({ Value: [1] });
  });
});
