import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../../src/core/contracts/canonical-json.js";
import { requestHash, toStoredInput } from "../../../src/server/service/stored-case.js";
import type { PreparedCase } from "../../../src/core/contracts/clinical-case.js";

const prepared = (over: Partial<PreparedCase> = {}): PreparedCase => ({
  id: "case-1",
  question: "Q?",
  notes: "n",
  options: { A: "a", B: "b" },
  images: [{ id: "img", mimeType: "image/png", data: "AAAA", sha256: "ab".repeat(32), caption: "c", width: 2, height: 2 }],
  ...over,
});

describe("canonicalJson", () => {
  it("sorts keys at every depth and keeps array order", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });
});

describe("toStoredInput", () => {
  it("replaces image bytes by content references", () => {
    expect(toStoredInput(prepared()).images).toEqual([{ id: "img", sha256: "ab".repeat(32), mimeType: "image/png", caption: "c" }]);
  });
});

describe("requestHash", () => {
  it("ignores the server-chosen id but not content, images or overrides", () => {
    const base = requestHash(toStoredInput(prepared()), {});
    expect(requestHash(toStoredInput(prepared({ id: "case-2" })), {})).toBe(base);
    expect(requestHash(toStoredInput(prepared({ options: { B: "b", A: "a" } })), {})).toBe(base);
    expect(requestHash(toStoredInput(prepared({ notes: "m" })), {})).not.toBe(base);
    expect(requestHash(toStoredInput(prepared()), { k: 2 })).not.toBe(base);
    const otherImage = prepared({ images: [{ id: "img", mimeType: "image/png", data: "BBBB", sha256: "cd".repeat(32) }] });
    expect(requestHash(toStoredInput(otherImage), {})).not.toBe(base);
  });
});
