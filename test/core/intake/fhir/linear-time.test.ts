import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bundleToCase } from "../../../../src/core/intake/fhir/bundle-to-case.js";

/**
 * Time per byte stays flat as a bundle grows in size and depth: every step of the intake is
 * linear (the reference walk used to copy its path at every level, 40,000 levels took 17 s).
 * Measured in CPU time against a baseline of the same shape, with a wide factor and an absolute
 * slack; a quadratic step would miss it by orders of magnitude.
 */
function bundleText(entries: number, depth: number, fanout: number): string {
  const leaf = '{"url":"http://example.org/leaf","valueString":"x"}';
  const nest = (inner: string, levels: number, width: number) => {
    // Built as text: JSON.stringify recurses and would overflow on the deep entry.
    let ext = inner;
    for (let d = 0; d < levels; d++) ext = `{"url":"http://example.org/n","extension":[${Array.from({ length: width }, () => ext).join(",")}]}`;
    return ext;
  };
  const entry: string[] = [];
  for (let i = 0; i < entries; i++) {
    // The first entry carries the depth (past the limit it is refused); the rest carry breadth.
    const ext = i === 0 ? nest(leaf, depth, 1) : nest(leaf, 3, fanout);
    const resource = { resourceType: "Observation", status: "final", code: { coding: [{ system: "http://loinc.org", code: `${1000 + (i % 50)}-0`, display: `Analyte ${i % 50}` }] }, subject: { reference: "Patient/outside" }, effectiveDateTime: `2026-01-${String(1 + (i % 28)).padStart(2, "0")}`, valueQuantity: { value: i / 7, unit: "mmol/L" } };
    entry.push(`{"fullUrl":"urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, "0")}","resource":${JSON.stringify(resource).slice(0, -1)},"extension":[${ext}]}}`);
  }
  return `{"resourceType":"Bundle","type":"searchset","entry":[${entry.join(",")}]}`;
}

/**
 * CPU milliseconds of bundleToCase on a body, best of a few runs. This process's CPU time, not
 * the wall clock: other processes on the shared machine (the other test worker, a build) stretch
 * wall time but not the CPU this synchronous call uses, which is what a quadratic step multiplies.
 */
function timeOf(body: unknown): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const t = process.cpuUsage();
    try {
      bundleToCase(body, { maxImageBytes: 1_000_000 });
    } catch {
      // a refusal (too deep) is timed like an acceptance
    }
    const used = process.cpuUsage(t);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

describe("FHIR intake time is linear in the bundle", () => {
  it("time per byte stays flat as size and depth grow (fast-check)", () => {
    const base = bundleText(200, 20, 3);
    const perByte = timeOf(JSON.parse(base)) / base.length;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_500 }), fc.integer({ min: 1, max: 50_000 }), fc.integer({ min: 1, max: 4 }), (entries, depth, fanout) => {
        const text = bundleText(entries, depth, fanout);
        const bytes = text.length;
        const ms = timeOf(JSON.parse(text));
        expect(ms, `${entries} entries, depth ${depth}, fanout ${fanout}: ${bytes} bytes`).toBeLessThan(perByte * bytes * 6 + 50);
      }),
      { numRuns: 12, seed: 0x2727 },
    );
  }, 120_000);
});
