import { bundleToCase, bundleToCaseYielding, FHIR_DEFAULTS } from "../../src/core/intake/fhir/bundle-to-case.js";
import type { BenchContext } from "../harness/context.js";
import { longestPause } from "../harness/loop-pause.js";
import { parseBundleInSlices } from "../../src/core/intake/fhir/sliced-json.js";
import { fmt, table, yesNo, type SectionReport } from "../harness/report.js";

const MIB = 1024 * 1024;
/** The HTTP body limit (MEDMMV_MAX_BODY_BYTES' default) bounds a bundle's bytes. */
const BYTE_LIMIT = 25 * MIB;

/**
 * A synthetic record (no real person) of about `bytes`, in the mix of a Synthea export:
 * vitals and labs of recurring codes, encounters with reasons, notes that name the patient,
 * and the billing resources that are never read. Each entry's extension nests `depth` levels.
 */
function recordText(bytes: number, depth: number): string {
  const ext = (levels: number) => {
    let e = '{"url":"http://example.org/leaf","valueString":"x"}';
    for (let d = 0; d < levels; d++) e = `{"url":"http://example.org/n","extension":[${e}]}`;
    return e;
  };
  // Each extension level is an object inside an array: two levels of nesting.
  const nested = depth > 2 ? `,"extension":[${ext(Math.floor((depth - 2) / 2))}]` : "";
  const patient = { resourceType: "Patient", id: "bench-1", name: [{ family: "Benchley42", given: ["Sam77"] }], gender: "female", birthDate: "1970-02-03", identifier: [{ value: "bench-1" }] };
  const parts = [JSON.stringify({ fullUrl: "urn:uuid:00000000-0000-4000-8000-000000000000", resource: patient })];
  let size = parts[0]!.length;
  for (let i = 1; size < bytes; i++) {
    const day = `20${String(10 + (i % 15)).padStart(2, "0")}-${String(1 + (i % 12)).padStart(2, "0")}-${String(1 + (i % 28)).padStart(2, "0")}`;
    const kind = i % 10;
    const r =
      kind < 5
        ? { resourceType: "Observation", id: `o-${i}`, status: "final", category: [{ coding: [{ code: kind < 2 ? "vital-signs" : "laboratory" }] }], code: { coding: [{ system: "http://loinc.org", code: `${3000 + (i % 40)}-1`, display: `Analyte ${i % 40}` }] }, subject: { reference: "Patient/bench-1" }, effectiveDateTime: day, valueQuantity: { value: 4 + (i % 89) / 7, unit: "mmol/L", code: "mmol/L" } }
        : kind < 7
          ? { resourceType: "Encounter", id: `e-${i}`, status: "finished", class: { code: "AMB" }, type: [{ text: i % 3 ? "Wellness visit" : "Encounter for symptom" }], subject: { reference: "Patient/bench-1" }, period: { start: day }, reasonCode: [{ text: "Acute bronchitis" }], participant: [{ individual: { reference: "Practitioner?identifier=http://hl7.org/fhir/sid/us-npi|9999999999" } }] }
          : kind < 8
            ? { resourceType: "DocumentReference", id: `d-${i}`, status: "current", type: { text: "Progress note" }, subject: { reference: "Patient/bench-1" }, date: day, content: [{ attachment: { contentType: "text/plain", data: Buffer.from(`Sam77 is a ${i % 60} year-old. Visit ${i}: cough, no fever. MRN bench-1.\nPlan: fluids.`).toString("base64") } }] }
            : { resourceType: "Claim", id: `c-${i}`, status: "active", patient: { reference: "Patient/bench-1" }, provider: { reference: "Organization?identifier=https://example.org|org-1" }, total: { value: 120.5, currency: "USD" } };
    const s = `${JSON.stringify({ fullUrl: `https://fhir.example.org/r4/${r.resourceType}/${r.id}`, resource: r }).slice(0, -2)}${nested}}}`;
    parts.push(s);
    size += s.length + 1;
  }
  return `{"resourceType":"Bundle","type":"searchset","entry":[${parts.join(",")}]}`;
}

/** Best-of-n milliseconds for JSON.parse plus the whole intake (a refusal is timed like an acceptance). */
function timeIntake(text: string, runs: number): { ms: number; outcome: string } {
  let best = Infinity;
  let outcome = "";
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    try {
      const c = bundleToCase(JSON.parse(text), { maxImageBytes: 10 * MIB });
      outcome = `case, ${c.notes?.length ?? 0} chars of notes`;
    } catch (err) {
      outcome = `refused: ${(err as Error).message.slice(28, 90)}…`;
    }
    best = Math.min(best, performance.now() - t);
  }
  return { ms: best, outcome };
}

/**
 * The longest the event loop went without running a 1 ms timer while the server's intake of
 * `text` ran (its JSON.parse, then bundleToCaseYielding in slices): what a /healthz probe
 * arriving during the read waits at worst. Also the JSON.parse alone, which is one block.
 */
async function loopHold(text: string): Promise<{ pause: number; parse: number; took: number }> {
  const { pause, took, value: parse } = await longestPause(async () => {
    // As the request arrives: the body is read, then parsed by the content-type parser, on a later turn of the loop.
    await new Promise((r) => setImmediate(r));
    const t = performance.now();
    // As POST /diagnose parses an application/fhir+json body: in slices (fhir-requests.ts).
    const body: unknown = await parseBundleInSlices(text, JSON.parse);
    const parse = performance.now() - t;
    await bundleToCaseYielding(body, { maxImageBytes: 10 * MIB }).catch(() => undefined);
    return parse;
  });
  return { pause, parse, took };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * FHIR intake (JSON.parse, version and depth checks, validation, references, rendering,
 * de-identification, summarising) in milliseconds per MiB: at record sizes up to the byte
 * limit, and at nesting depths up to the depth limit and far past it. Linear means flat.
 */
export async function fhirIntake(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const runs = ctx.quick ? 1 : 3;
  const sizes = ctx.quick ? [1, 4, 8] : [1, 4, 8, 16, 24];
  // Warm the JIT first: the first MiB would otherwise pay for compiling the reader.
  timeIntake(recordText(MIB, 4), 2);
  const sizeRows: Array<Array<string | number>> = [];
  const perMb: number[] = [];
  for (const mib of sizes) {
    const text = recordText(mib * MIB, 4);
    const { ms, outcome } = timeIntake(text, runs);
    const entries = (text.match(/"fullUrl"/g) ?? []).length;
    perMb.push(ms / (text.length / MIB));
    sizeRows.push([fmt(text.length / MIB, 1), entries, fmt(ms, 0), fmt(ms / (text.length / MIB), 0), outcome]);
    ctx.log(`fhir-intake: ${mib} MiB → ${fmt(ms, 0)} ms`);
  }
  const depthRows: Array<Array<string | number>> = [];
  const depthPerMb: number[] = [];
  const depths = [4, 16, 32, FHIR_DEFAULTS.maxDepth, FHIR_DEFAULTS.maxDepth + 2, 1_000, 40_000];
  for (const depth of depths) {
    const text = recordText(2 * MIB, depth);
    const { ms, outcome } = timeIntake(text, runs);
    if (depth <= FHIR_DEFAULTS.maxDepth) depthPerMb.push(ms / (text.length / MIB));
    depthRows.push([depth, fmt(text.length / MIB, 1), fmt(ms, 0), fmt(ms / (text.length / MIB), 0), outcome]);
  }
  // The event loop while a 7.8 MB record is read (the size an integrator's record stalled /healthz at): median of 3.
  const holdText = recordText(7.8 * 1e6, 4);
  const holds: Array<{ pause: number; parse: number; took: number }> = [];
  for (let i = 0; i < 3; i++) holds.push(await loopHold(holdText));
  const holdPause = median(holds.map((h) => h.pause));
  const holdParse = median(holds.map((h) => h.parse));
  const growth = perMb.at(-1)! / perMb[0]!;
  const depthGrowth = depthPerMb.at(-1)! / depthPerMb[0]!;
  const body = [
    `A synthetic record in a Synthea-like mix (vitals and labs of recurring codes, encounters, notes naming the patient, unread Claims), read as the server reads it: \`JSON.parse\` then \`bundleToCase\` (version and nesting checks, validation, references, rendering, de-identification, summarising to MEDMMV_FHIR_NOTES_BUDGET). Best of ${runs} run(s) each. The byte limit is the HTTP body limit (${BYTE_LIMIT / MIB} MiB); the server reads in slices of a few milliseconds (\`bundleToCaseYielding\`), so these times are spread, not one block on the event loop.`,
    "",
    table(["MiB", "entries", "ms", "ms per MiB", "outcome"], sizeRows, ["r", "r", "r", "r", "l"]),
    "",
    `Nesting: every entry of a 2 MiB record carries an extension nested to the depth shown (the limit is ${FHIR_DEFAULTS.maxDepth}, MEDMMV_FHIR_MAX_DEPTH); past it the bundle is refused on the first entry that exceeds it.`,
    "",
    table(["depth", "MiB", "ms", "ms per MiB", "outcome"], depthRows, ["r", "r", "r", "r", "l"]),
    "",
    `The event loop while a ${fmt(holdText.length / 1e6, 1)} MB record is read as the server reads it (its JSON parsed in slices, \`parseBundleInSlices\`, then \`bundleToCaseYielding\`): the longest gap between runs of a 1 ms timer, which is what a \`/healthz\` probe arriving during the read waits at worst. Three runs, median.`,
    "",
    table(["run", "longest hold (ms)", "JSON parse, spread over slices (ms)", "whole read (ms)"], holds.map((h, i) => [i + 1, fmt(h.pause, 0), fmt(h.parse, 0), fmt(h.took, 0)])),
  ].join("\n");
  return {
    id: "fhir-intake",
    title: "FHIR intake: time per MiB by size and nesting depth",
    command: "npm run bench -- --only fhir-intake",
    body,
    verdicts: [
      { target: `time per MiB at ${sizes.at(-1)} MiB within 2× of that at ${sizes[0]} MiB (linear in size)`, measured: `${fmt(perMb.at(-1)!, 0)} vs ${fmt(perMb[0]!, 0)} ms/MiB (×${fmt(growth, 2)})`, met: growth <= 2 },
      { target: `time per MiB at depth ${FHIR_DEFAULTS.maxDepth} within 2× of that at depth 4 (linear in depth)`, measured: `×${fmt(depthGrowth, 2)}`, met: depthGrowth <= 2 },
      { target: `the event loop held under 50 ms while a ${fmt(holdText.length / 1e6, 1)} MB record is read (median of 3)`, measured: `${fmt(holdPause, 0)} ms (the JSON parse took ${fmt(holdParse, 0)} ms, in slices)`, met: holdPause < 50 },
      { target: "a 40,000-deep bundle refused, not walked", measured: yesNo(String(depthRows.at(-1)![4]).startsWith("refused")), met: String(depthRows.at(-1)![4]).startsWith("refused") },
    ],
    seconds: (Date.now() - started) / 1000,
  };
}
