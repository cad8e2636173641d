import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseBundleInSlices } from "../../../../src/core/intake/fhir/sliced-json.js";
import { largeBundleText } from "./large-record.js";

describe("a Bundle's JSON parsed in slices", () => {
  it("gives what JSON.parse gives, for bundles of every shape", async () => {
    const texts = [
      '{"resourceType":"Bundle","type":"collection","entry":[{"resource":{"resourceType":"Patient","id":"a","name":[{"text":"x ] } , [ \\" {"}]}}, {"fullUrl":"u"} ,{}],"link":[{"relation":"self","url":"x"}]}',
      ' { "entry" : [ ] , "type" : "searchset" } ',
      '{"type":"collection"}',
      '{"entry":null,"link":[1,2]}',
      '{"entry":[1, "two", [3], {"four": 4}, null, true]}',
      '[1,2]',
      largeBundleText(200_000),
    ];
    for (const t of texts) expect(await parseBundleInSlices(t, JSON.parse)).toEqual(JSON.parse(t));
  });

  it("gives what JSON.parse gives for any JSON entries and envelope, however spaced (fast-check)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.jsonValue(), { maxLength: 8 }), fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 4 }), fc.constantFrom(undefined, 1, "\t"), async (entry, rest, space) => {
        const text = JSON.stringify({ ...rest, entry }, null, space);
        expect(await parseBundleInSlices(text, JSON.parse)).toEqual(JSON.parse(text));
      }),
      { numRuns: 200 },
    );
  });

  it("a text it cannot split cleanly is parsed whole, so a malformed body gets the whole parse's error", async () => {
    for (const t of ['{"entry":[{"a":1},]}', '{"entry":[1],"entry":[2]}', '{"entry":[{"a":1}', "{"]) {
      const whole = (() => {
        try {
          return JSON.parse(t) as unknown;
        } catch (e) {
          return (e as Error).message;
        }
      })();
      const sliced = await parseBundleInSlices(t, JSON.parse).catch((e: Error) => e.message);
      expect(sliced).toEqual(whole);
    }
  });

  it("the event loop runs between slices of a large body", async () => {
    const text = largeBundleText(4 * 1024 * 1024);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    try {
      await parseBundleInSlices(text, JSON.parse, 1);
    } finally {
      clearInterval(timer);
    }
    // A whole parse lets no timer run; in 1 ms slices of a 4 MiB body several do (a condition, not a time).
    expect(ticks).toBeGreaterThan(1);
  });
});
