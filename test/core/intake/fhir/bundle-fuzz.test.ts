import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bundleToCase } from "../../../../src/core/intake/fhir/bundle-to-case.js";
import { ClinicalCase } from "../../../../src/core/contracts/clinical-case.js";
import { isMedmmvError } from "../../../../src/core/contracts/errors.js";
import { STATUS_BY_CODE } from "../../../../src/server/http/errors.js";
import { FIXTURES, fixtureBundle } from "./fhir-fixtures.js";

/**
 * Whatever a FHIR client sends, the bundle reader answers with a case or with a client
 * error naming the element: never another exception (that would be a 500).
 */
const value = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 40 }),
  fc.constantFrom("Patient/stemi-1", "urn:uuid:00000000-0000-4000-8000-000000000000", "#x", "http://x/Observation/1", "", "1968-13-40", "1850-01-01", "aW1n", "final", "image/png"),
  fc.array(fc.anything({ maxDepth: 2 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.anything({ maxDepth: 2 }), { maxKeys: 3 }),
);

/** Set (or delete) the element at a random path of a random entry. */
const mutation = fc.record({
  fixture: fc.constantFrom(...FIXTURES),
  entry: fc.nat(),
  keys: fc.array(fc.oneof(fc.constantFrom("resourceType", "id", "status", "code", "subject", "reference", "valueQuantity", "value", "component", "content", "data", "url", "contentType", "birthDate", "gender", "entry", "type"), fc.nat(3)), { minLength: 1, maxLength: 3 }),
  value,
  atRoot: fc.boolean(),
});

function mutate(m: { fixture: (typeof FIXTURES)[number]; entry: number; keys: Array<string | number>; value: unknown; atRoot: boolean }): unknown {
  const b = fixtureBundle(m.fixture) as Record<string, unknown> & { entry: Array<{ resource: Record<string, unknown> }> };
  let target: Record<string | number, unknown> = m.atRoot ? b : (b.entry[m.entry % b.entry.length]!.resource as Record<string | number, unknown>);
  for (const k of m.keys.slice(0, -1)) {
    const next = target[k];
    if (!next || typeof next !== "object") break;
    target = next as Record<string | number, unknown>;
  }
  const last = m.keys.at(-1)!;
  if (m.value === undefined) delete target[last];
  else target[last] = m.value;
  return b;
}

describe("bundleToCase under fuzzing", () => {
  it("returns a valid case or throws a 4xx MedmmvError, for 400 mutated bundles", () => {
    fc.assert(
      fc.property(mutation, (m) => {
        const body = mutate(m);
        let c: ClinicalCase;
        try {
          c = bundleToCase(body, { maxImageBytes: 5_000_000 });
        } catch (err) {
          if (!isMedmmvError(err)) throw new Error(`not a MedmmvError: ${String(err)} for ${JSON.stringify(m).slice(0, 300)}`);
          expect(STATUS_BY_CODE[err.code]).toBeGreaterThanOrEqual(400);
          expect(STATUS_BY_CODE[err.code]).toBeLessThan(500);
          const issues = err.details?.issues as Array<{ path: string; fhirCode: string }> | undefined;
          expect(issues?.length).toBeGreaterThan(0);
          for (const i of issues!) expect(i.path).toMatch(/^(Bundle|option)/);
          return;
        }
        // The routes validate the case next: one the reader builds must pass, or its refusal would name no FHIR element.
        expect(ClinicalCase.safeParse(c).success).toBe(true);
      }),
      { numRuns: 400, seed: 0x46484952 },
    );
  });
});
