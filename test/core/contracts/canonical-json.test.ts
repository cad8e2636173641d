import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../../src/core/contracts/canonical-json.js";

describe("canonicalJson", () => {
  it("sorts keys at every depth", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 0, y: 1 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":1,"z":0}]},"b":1}');
  });

  it("escapes lone surrogates (never broken UTF-8), keeps pairs, and tells different strings apart", () => {
    const high = "x\ud800y";
    const low = "x\udc00y";
    expect(canonicalJson({ s: high })).toBe('{"s":"x\\ud800y"}');
    expect(canonicalJson({ s: low })).toBe('{"s":"x\\udc00y"}');
    expect(canonicalJson({ s: "😀" })).toBe('{"s":"😀"}');
    // round trip through UTF-8 bytes (what is hashed) is lossless
    const text = canonicalJson({ high, low });
    expect(Buffer.from(text, "utf8").toString("utf8")).toBe(text);
    expect(JSON.parse(text)).toEqual({ high, low });
  });
});
