import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { nodeId, normalizeLabel } from "../../../src/core/evidence/ids.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";

describe("normalizeLabel", () => {
  it("lowercases, applies NFKC, collapses whitespace and strips trailing punctuation", () => {
    expect(normalizeLabel("  Fever   for\n3 days. ")).toBe("fever for 3 days");
    // Full-width letters and digits fold under NFKC; the ﬁ ligature becomes "fi".
    expect(normalizeLabel("ＦＥＶＥＲ ３ days")).toBe("fever 3 days");
    expect(normalizeLabel("Proﬁle!?")).toBe("profile");
    expect(normalizeLabel("Chest pain;:")).toBe("chest pain");
  });

  it("keeps punctuation that carries meaning", () => {
    expect(normalizeLabel("SpO2 88%")).toBe("spo2 88%");
    expect(normalizeLabel("Fever (39 °C)")).toBe("fever (39 °c)");
    expect(normalizeLabel("3.5 mmol/L")).toBe("3.5 mmol/l");
  });
});

describe("nodeId", () => {
  const hex12 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex").slice(0, 12);

  it("is the kind prefix plus the first 12 hex of sha256(normalised label)", () => {
    expect(nodeId("finding", "Fever for 3 days.")).toBe("f:" + hex12("fever for 3 days"));
    expect(nodeId("knowledge", "Fever for 3 days")).toBe("k:" + hex12("fever for 3 days"));
    expect(nodeId("hypothesis", "Pneumonia")).toBe("h:" + hex12("pneumonia"));
  });

  it("is deterministic and identical for labels that normalise the same", () => {
    expect(nodeId("finding", "Fever  for 3 days")).toBe(nodeId("finding", "fever for 3 days."));
    expect(nodeId("finding", "fever for 3 days")).not.toBe(nodeId("finding", "fever for 4 days"));
    expect(nodeId("finding", "x")).toMatch(/^f:[0-9a-f]{12}$/);
  });

  it("refuses an empty label", () => {
    expect(() => nodeId("finding", "  ... ")).toThrow(MedmmvError);
  });
});
