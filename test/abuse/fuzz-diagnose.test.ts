import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_FREE_JSON_DEPTH } from "../../src/core/contracts/clinical-case.js";
import { TERMINAL_STATUSES } from "../../src/server/store/case-store.js";
import { startTestServer, until, type TestServer } from "../server/http/http-harness.js";
import { gifWithCanvas, jpegWithCanvas, pngWithCanvas, smallPng, webpWithCanvas } from "../../src/scripted/image-bytes.js";
import { recordReliability, type ReliabilityRow } from "../support/reliability-recorder.js";
import { fuzzShare } from "../support/fault-trials.js";

/**
 * Property-based fuzzing of POST /diagnose: thousands of generated bodies — wrong types,
 * huge strings, deep nesting, bad base64, wrong MIME types, oversize images, decompression
 * bombs, broken multipart — must each get a 4xx with a JSON message (or, when the body
 * happens to be a valid case, a 202 and a stored case). Never a 5xx, never a crash, and
 * every accepted case runs to a terminal state.
 */
const MAX_IMAGE_BYTES = 64 * 1024;
const MAX_BODY_BYTES = 1024 * 1024;
const MAX_PIXELS = 4_000_000;
const SEED = 0x6d65646d;
/** Half of each category in `npm test`, all of it in `npm run reliability` (test/support/fault-trials.ts). */
const SHARE = fuzzShare();

let t: TestServer;
const accepted: string[] = [];
const statusCounts = new Map<string, Map<number, number>>();
const rows: ReliabilityRow[] = [];
let sent = 0;
const warnings: string[] = [];
const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);

beforeAll(async () => {
  process.on("warning", onWarning);
  t = await startTestServer({
    env: {
      MEDMMV_RATE_LIMIT_PER_MIN: "1000000",
      MEDMMV_MAX_IMAGE_BYTES: String(MAX_IMAGE_BYTES),
      MEDMMV_MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      MEDMMV_MAX_IMAGE_PIXELS: String(MAX_PIXELS),
      // Valid bodies start real cases: keep each one cheap (1 rollout, no repairs).
      MEDMMV_K: "1",
      MEDMMV_MAX_REPAIRS: "0",
      MEDMMV_LOG_LEVEL: "info",
    },
  });
});
afterAll(async ({}, suite) => {
  process.off("warning", onWarning);
  recordReliability("abuse-fuzz", rows, suite);
  await t?.close();
});

// ---------------------------------------------------------------------------------------
// Requests and the property every response must satisfy
// ---------------------------------------------------------------------------------------

interface FuzzRequest {
  /** JSON text, raw bytes, or a multipart form. */
  body: string | Uint8Array | FormData;
  contentType?: string;
  query?: string;
  headers?: Record<string, string>;
  /**
   * The statuses this body may get, stated by the generator that made it: a body meant to be
   * valid expects [202]; an invalid one the 4xx statuses that say why (a 202 for it fails).
   */
  expect: readonly number[];
  /** Text the error message must contain (the field to fix), when the body is invalid. */
  mentions?: string;
}

const json = (v: unknown, extra: Omit<FuzzRequest, "body">): FuzzRequest => ({ body: JSON.stringify(v), contentType: "application/json", ...extra });

function tally(category: string, status: number): void {
  let m = statusCounts.get(category);
  if (!m) statusCounts.set(category, (m = new Map()));
  m.set(status, (m.get(status) ?? 0) + 1);
}

async function send(category: string, req: FuzzRequest): Promise<void> {
  const headers: Record<string, string> = { prefer: "respond-async", ...req.headers };
  if (req.contentType !== undefined) headers["content-type"] = req.contentType;
  const res = await t.api(`/diagnose${req.query ?? ""}`, { method: "POST", body: req.body as BodyInit, headers });
  const text = await res.text();
  sent++;
  tally(category, res.status);
  const sentBody = typeof req.body === "string" ? req.body : req.body instanceof Uint8Array ? `${req.body.length} bytes` : "multipart form";
  const what = `${category}: HTTP ${res.status} ${text.slice(0, 300)} (sent ${req.contentType ?? "no content-type"}${req.query ?? ""} ${JSON.stringify(req.headers ?? {}).slice(0, 80)} ${sentBody.slice(0, 120)} [${sentBody.length} chars])`;
  expect(res.status, what).toBeLessThan(500);
  expect(req.expect, what).toContain(res.status);
  if (res.status === 202) {
    const body = JSON.parse(text) as { caseId: string; location: string };
    expect(body.caseId, what).toMatch(/^case-/);
    accepted.push(body.caseId);
    // Accepted means stored: the case is there before any model call has answered.
    expect((await t.api(body.location)).status, what).toBe(200);
    return;
  }
  expect(res.status, what).toBeGreaterThanOrEqual(400);
  expect(res.headers.get("content-type"), what).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { statusCode: number; code: string; message: string };
  expect(body.statusCode, what).toBe(res.status);
  expect(typeof body.code, what).toBe("string");
  expect(typeof body.message, what).toBe("string");
  expect(body.message.length, what).toBeGreaterThan(0);
  if (req.mentions) expect(body.message, what).toContain(req.mentions);
}

async function fuzz(category: string, arb: fc.Arbitrary<FuzzRequest>, numRuns: number): Promise<void> {
  const before = sent;
  await fc.assert(
    fc.asyncProperty(arb, async (req) => send(category, req)),
    { numRuns, seed: SEED, endOnFailure: true },
  );
  // Still alive and answering after the category.
  expect((await t.api("/healthz", { key: null })).status).toBe(200);
  const counts = [...(statusCounts.get(category) ?? new Map<number, number>()).entries()].sort(([a], [b]) => a - b);
  rows.push({
    suite: "abuse",
    scenario: `POST /diagnose fuzz: ${category}`,
    trials: sent - before,
    outcome: `every status the one its generator stated (no 5xx): ${counts.map(([s, n]) => `${s}×${n}`).join(", ")}`,
    itemsLost: 0,
  });
}

// ---------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------

const PNG = smallPng(8, 8);
const b64 = (b: Buffer) => b.toString("base64");
const baseCase = () => ({
  question: "What is the most likely diagnosis?",
  notes: "A 40-year-old with fever and productive cough for three days; crackles at the right base.",
  options: { A: "Pneumonia", B: "Asthma" },
});

/** Valid small cases (each must be accepted). */
const validCase = fc.record(
  {
    question: fc.string({ minLength: 1, maxLength: 200 }).filter((s) => s.trim().length > 0),
    notes: fc.string({ maxLength: 400 }),
    options: fc.dictionary(fc.constantFrom(..."ABCDE"), fc.string({ minLength: 1, maxLength: 40 }), { maxKeys: 5 }),
    images: fc.array(
      fc.record({ id: fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/), caption: fc.string({ maxLength: 60 }) }).map((i) => ({ ...i, data: b64(PNG) })),
      { maxLength: 2 },
    ),
    patient: fc.record({ age: fc.integer({ min: 0, max: 120 }), sex: fc.constantFrom("female", "male", "other") }, { requiredKeys: [] }),
    metadata: fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ depthSize: "small", maxDepth: 4 }), { maxKeys: 4 }),
  },
  { requiredKeys: ["question"] },
).map((c) => {
  const out = withoutPrototypeKeys({ ...c }) as Record<string, unknown>;
  // Image ids must be unique within a case; drop repeats rather than expect a 400.
  if (c.images) out.images = c.images.filter((img, i, all) => all.findIndex((x) => x.id === img.id) === i);
  return out;
});

/**
 * "__proto__" and "constructor" keys are refused by the JSON parser on purpose (prototype
 * poisoning, a 400 tested on its own below); a body meant to be valid must not carry them.
 */
function withoutPrototypeKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutPrototypeKeys);
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k]) => k !== "__proto__" && k !== "constructor" && k !== "prototype")
      .map(([k, x]) => [k, withoutPrototypeKeys(x)]),
  );
}

const wrongValue = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 20 }),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);
const FIELDS = ["question", "notes", "options", "images", "patient", "metadata", "id"] as const;

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Whether `v` is an acceptable value for a case field, by the contract in docs/architecture.md#data-contracts (written
 * out here, not read from the product's schema, so a schema that loosened would be caught).
 * Only used to keep valid values out of "wrong types": every body there must get a 400.
 */
function validFor(field: (typeof FIELDS)[number], v: unknown): boolean {
  switch (field) {
    case "question":
      return typeof v === "string" && v.trim().length > 0;
    case "notes":
      return typeof v === "string";
    case "options":
      return isPlainObject(v) && Object.entries(v).every(([k, x]) => /^[A-Z]$/.test(k) && typeof x === "string" && x.length > 0);
    case "images":
      // [] is a case without images; any element the generator makes is not an image.
      return Array.isArray(v) && v.length === 0;
    case "patient":
    case "metadata":
      // Free-form objects are accepted (age/sex typed; prototype keys refused): left to the valid category.
      return isPlainObject(v);
    case "id":
      return typeof v === "string" && /^[A-Za-z0-9._:-]{1,200}$/.test(v);
  }
}

/** One field of a good case swapped for a value of a type it does not take; or a body that is not a case. Each a 400. */
const wrongTypes: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .tuple(fc.constantFrom(...FIELDS), wrongValue)
    .filter(([field, v]) => !validFor(field, v))
    .map(([field, v]) => json({ ...baseCase(), [field]: v }, { expect: [400] })),
  // A number where the question goes: the regression the issue names.
  fc.oneof(fc.integer(), fc.double({ noNaN: true })).map((n) => json({ ...baseCase(), question: n }, { expect: [400], mentions: "body.question" })),
  fc
    .tuple(fc.constantFrom("A", "a", "AB", "1", "", "\u00e4"), wrongValue)
    .filter(([k, v]) => !(k === "A" && typeof v === "string" && v.length > 0))
    .map(([k, v]) => json({ ...baseCase(), options: { [k]: v } }, { expect: [400] })),
  fc
    .tuple(fc.constantFrom("id", "data", "caption", "mimeType", "path", "url", "extra"), wrongValue)
    // A string is what id, caption and mimeType take (a lying mimeType is fine: the bytes decide).
    .filter(([k, v]) => !(["id", "caption", "mimeType"].includes(k) && typeof v === "string" && (k !== "id" || v.length > 0)))
    .map(([k, v]) =>
      // A string in `data` is read as base64: not an image (415) or not base64 (400).
      json({ ...baseCase(), images: [{ id: "img", data: b64(PNG), [k]: v }] }, { expect: k === "data" && typeof v === "string" ? [400, 415] : [400] }),
    ),
  // Any JSON that is not an object with a question: no case at all.
  fc
    .jsonValue({ maxDepth: 3 })
    .filter((v) => !(isPlainObject(v) && "question" in v))
    .map((v) => json(v, { expect: [400] })),
  fc.string({ maxLength: 200 }).map((s) => ({ body: s, contentType: "application/json", expect: [400] })),
  // Typed patient fields with the wrong type or out of range.
  fc
    .oneof(
      fc.record({ age: fc.oneof(fc.integer({ max: -1 }), fc.integer({ min: 151 }), fc.string({ maxLength: 5 }), fc.constant(null)) }),
      fc.record({ sex: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 })) }),
    )
    .map((patient) => json({ ...baseCase(), patient }, { expect: [400], mentions: "body.patient" })),
);

/**
 * The string limits of docs/architecture.md#data-contracts (src/core/contracts/clinical-case.ts), written out so that a loosened schema
 * fails here: field (as caseWithString names it), limit in characters, and the path a 400
 * names. Both the length-limit test and the huge-string generator read them.
 */
const FIELD_LIMITS: Array<[field: string, limit: number, path: string]> = [
  ["question", 20_000, "body.question"],
  ["notes", 200_000, "body.notes"],
  ["option", 5_000, "body.options.A"],
  ["caption", 2_000, "body.images[0].caption"],
  ["imageId", 128, "body.images[0].id"],
  ["caseId", 200, "body.id"],
  ["sex", 32, "body.patient.sex"],
  ["mimeType", 64, "body.images[0].mimeType"],
];
/** The Idempotency-Key header's limit: a header, so not one of the body's FIELD_LIMITS. */
const IDEMPOTENCY_KEY_LIMIT = 255;

/** A good case with `s` in one string field (the idempotency key is a header, set by the caller). */
function caseWithString(field: string, s: string): Record<string, unknown> {
  const c: Record<string, unknown> = baseCase();
  if (field === "question") c.question = s;
  if (field === "notes") c.notes = s;
  if (field === "option") c.options = { A: s, B: "other" };
  if (field === "caption") c.images = [{ id: "img", caption: s, data: b64(PNG) }];
  if (field === "imageId") c.images = [{ id: s, data: b64(PNG) }];
  if (field === "caseId") c.id = s;
  if (field === "sex") c.patient = { sex: s };
  if (field === "mimeType") c.images = [{ id: "img", mimeType: s, data: b64(PNG) }];
  return c;
}

/** Strings at, just over, and far over each field's limit, in awkward alphabets. */
const hugeStrings: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.constantFrom<[string, number]>(...FIELD_LIMITS.map(([field, limit]): [string, number] => [field, limit]), ["idempotency-key", IDEMPOTENCY_KEY_LIMIT]),
    fc.constantFrom(0, 1, 1000, MAX_BODY_BYTES),
    fc.constantFrom("x", "é", "😀", "\u0000", " ", "\ud800", "\n"),
    // Keys must differ between requests: a reused key is a replay (202 or 409), not a new case.
    fc.uuid(),
  )
  .map(([[field, limit], over, ch, uuid]) => {
    // Limits count characters (code points): each `ch` is one, whatever its UTF-16 or UTF-8 length.
    const s = ch.repeat(limit + over);
    const c = caseWithString(field, s);
    const headers: Record<string, string> = {};
    // Header values must be bytes a client can send: the long key is ASCII.
    const keyLength = Math.min(limit + over, 8192);
    if (field === "idempotency-key") headers["idempotency-key"] = uuid + "k".repeat(keyLength - uuid.length);
    return json(c, { headers, expect: hugeStringExpect(field, over, ch, Buffer.byteLength(JSON.stringify(c)), keyLength) });
  });

/**
 * What a string of `limit + over` characters `ch` in `field` must get.
 */
function hugeStringExpect(field: string, over: number, ch: string, bodyBytes: number, keyLength: number): number[] {
  if (bodyBytes > MAX_BODY_BYTES) return [413];
  if (field === "idempotency-key") return keyLength <= IDEMPOTENCY_KEY_LIMIT ? [202] : [400];
  if (over > 0) return [400];
  // At the limit: accepted, unless the characters are not allowed there.
  if (field === "question" && ch.trim() === "") return [400]; // blank once trimmed
  if (field === "caseId" && !/^[A-Za-z0-9._:-]$/.test(ch)) return [400];
  return [202];
}

/** Objects or arrays nested from 1 to 100,000 levels, in every free-form and typed spot. */
const deepNesting: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(MAX_FREE_JSON_DEPTH, MAX_FREE_JSON_DEPTH + 1, 1_000, 10_000, 100_000)),
    fc.constantFrom("object", "array"),
    fc.constantFrom("metadata", "patient", "question", "options", "images", "root", "notes"),
  )
  .map(([depth, kind, where]) => {
    const open = kind === "object" ? '{"k":' : "[";
    const close = kind === "object" ? "}" : "]";
    const nested = open.repeat(depth) + "1" + close.repeat(depth);
    const q = '"question":"What is the diagnosis?"';
    const body = {
      metadata: `{${q},"metadata":{"x":${nested}}}`,
      patient: `{${q},"patient":{"extra":${nested}}}`,
      question: `{"question":${nested}}`,
      options: `{${q},"options":{"A":${nested}}}`,
      images: `{${q},"images":${nested}}`,
      root: nested,
      notes: `{${q},"notes":${nested}}`,
    }[where];
    // metadata.x / patient.extra hold the value at depth 1: valid up to the limit.
    const valid = (where === "metadata" || where === "patient") && depth <= MAX_FREE_JSON_DEPTH;
    const oversize = Buffer.byteLength(body) > MAX_BODY_BYTES;
    return { body, contentType: "application/json", expect: valid ? [202] : oversize ? [413] : [400] };
  });

const BASE64_JUNK = fc.constantFrom("!", "*", "-", "_", " ", "\t", "%", "=", "é", "\u0000", "==", "===", "\r");
/** Not base64: stray characters, bad padding, wrong length, URL-safe alphabet, prefixes. */
const badBase64: fc.Arbitrary<FuzzRequest> = fc
  .oneof(
    fc.tuple(fc.nat({ max: b64(PNG).length }), BASE64_JUNK).map(([at, junk]) => b64(PNG).slice(0, at) + junk + b64(PNG).slice(at)),
    // Over-padded: three '=' are never valid, whatever the length before them.
    fc.nat({ max: 3 }).map((cut) => b64(PNG).replace(/=+$/, "").slice(0, b64(PNG).replace(/=+$/, "").length - cut) + "==="),
    fc.string({ minLength: 1, maxLength: 80 }).filter((s) => !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0),
    fc.constantFrom("data:image/png;base64,!!!!", "data:;base64,", "data:image/png,iVBOR", "http://127.0.0.1:9/x.png", "file:///etc/passwd", "//evil/x.png"),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((u) => Buffer.from(u).toString("base64url") + "-_"),
  )
  .map((data) => json({ ...baseCase(), images: [{ id: "img", mimeType: "image/png", data }] }, { expect: [400, 413, 415] }));

const NOT_IMAGES: Array<[string, Buffer]> = [
  ["pdf", Buffer.from("%PDF-1.7\n1 0 obj\n<<>>\nendobj\n")],
  ["svg", Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')],
  ["html", Buffer.from("<!doctype html><img src=x onerror=alert(1)>")],
  ["bmp", Buffer.concat([Buffer.from("BM"), Buffer.alloc(60, 1)])],
  ["tiff", Buffer.concat([Buffer.from([0x49, 0x49, 0x2a, 0x00]), Buffer.alloc(32, 0)])],
  ["zip", Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(32, 0)])],
  ["elf", Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46]), Buffer.alloc(32, 0)])],
];
/** Declared types that lie: the real type comes from the bytes. */
const wrongMime: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .tuple(fc.constantFrom(...NOT_IMAGES), fc.constantFrom("image/png", "image/jpeg", "image/svg+xml", "text/html", "application/pdf", "image/webp"))
    .map(([[, bytes], mime]) => json({ ...baseCase(), images: [{ id: "img", mimeType: mime, data: b64(bytes) }] }, { expect: [415] })),
  fc.uint8Array({ minLength: 1, maxLength: 256 }).map((u) => json({ ...baseCase(), images: [{ id: "img", data: b64(Buffer.from(u)) }] }, { expect: [400, 415] })),
  // A real PNG with a lying label is still a PNG: accepted, stored as image/png.
  fc.string({ maxLength: 64 }).map((mime) => json({ ...baseCase(), images: [{ id: "img", mimeType: mime, data: b64(PNG) }] }, { expect: [202] })),
  fc.constant(json({ ...baseCase(), images: [{ id: "img", mimeType: "image/png", data: "" }] }, { expect: [400] })),
);

/** Bytes or pixel counts over the limits, and too many images. */
const oversizeImages: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc.integer({ min: MAX_IMAGE_BYTES + 1, max: MAX_IMAGE_BYTES * 3 }).map((n) => {
    const padded = Buffer.concat([PNG, Buffer.alloc(n - PNG.length, 0)]);
    return json({ ...baseCase(), images: [{ id: "big", data: b64(padded) }] }, { expect: [413] });
  }),
  fc.integer({ min: 17, max: 40 }).map((n) =>
    json({ ...baseCase(), images: Array.from({ length: n }, (_, i) => ({ id: `i${i}`, data: b64(PNG) })) }, { expect: [400] }),
  ),
  fc.integer({ min: 2, max: 16 }).map((n) => {
    // Each image under the per-image limit, together over the body limit.
    const each = Buffer.concat([PNG, Buffer.alloc(MAX_IMAGE_BYTES - PNG.length - 16, 7)]);
    const body = { ...baseCase(), images: Array.from({ length: n }, (_, i) => ({ id: `i${i}`, data: b64(each) })) };
    return json(body, { expect: Buffer.byteLength(JSON.stringify(body)) > MAX_BODY_BYTES ? [413] : [202] });
  }),
);

/** Headers that claim enormous canvases (decompression bombs), zero sizes and truncated headers. */
const bombs: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc.constant(json({ ...baseCase(), images: [{ id: "bomb", mimeType: "image/png", data: b64(pngWithCanvas(50_000, 50_000)) }] }, { expect: [413] })),
  fc
    .tuple(fc.integer({ min: 2_001, max: 2 ** 31 - 1 }), fc.integer({ min: 2_001, max: 2 ** 31 - 1 }), fc.constantFrom("png", "gif", "jpeg", "webp"))
    .map(([w, h, kind]) => {
      const gw = Math.min(w, 65_535);
      const gh = Math.min(h, 65_535);
      const bytes = kind === "png" ? pngWithCanvas(w, h) : kind === "gif" ? gifWithCanvas(gw, gh) : kind === "jpeg" ? jpegWithCanvas(gw, gh) : webpWithCanvas(Math.min(w, 16_384), Math.min(h, 16_384));
      return json({ ...baseCase(), images: [{ id: "bomb", data: b64(bytes) }] }, { expect: [413] });
    }),
  // (A 0×0 GIF is not here: libnsgif reads it as a 1×1 picture, which is a valid image.)
  fc.constantFrom(pngWithCanvas(0, 10), pngWithCanvas(10, 0), gifWithCanvas(10, 10).subarray(0, 12), pngWithCanvas(10, 10).subarray(0, 20), jpegWithCanvas(10, 0)).map((bytes) =>
    json({ ...baseCase(), images: [{ id: "broken", data: b64(bytes) }] }, { expect: [400] }),
  ),
);

function form(parts: Array<[string, string | Blob, string?]>): FormData {
  const f = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === "string") f.append(name, value);
    else f.append(name, value, filename ?? "file.bin");
  }
  return f;
}
const blob = (b: Buffer) => new Blob([new Uint8Array(b)]);

/** multipart/form-data: the case as a field plus file parts, in every broken shape. */
const multipart: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify({ ...baseCase(), images: [{ id: "film" }] })], ["film", blob(PNG), "film.png"]]), expect: [202] }),
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify(baseCase())], ["extra", blob(PNG)]]), expect: [202] }),
  fc.constant<FuzzRequest>({ body: form([["film", blob(PNG)]]), expect: [400] }),
  // Not a case: 60 random characters are never `{"question": ...}`.
  fc.string({ maxLength: 60 }).map((s) => ({ body: form([["case", s]]), expect: [400] })),
  fc.constant<FuzzRequest>({ body: form([["case", "[1,2,3]"]]), expect: [400] }),
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify(baseCase())], ["note", "unexpected field"]]), expect: [400] }),
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify(baseCase())], ["x", blob(PNG)], ["x", blob(PNG)]]), expect: [400] }),
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify({ ...baseCase(), images: [{ id: "missing" }] })]]), expect: [400] }),
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify(baseCase())], ["bomb", blob(pngWithCanvas(50_000, 50_000))]]), expect: [413] }),
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify(baseCase())], ["big", blob(Buffer.concat([PNG, Buffer.alloc(MAX_IMAGE_BYTES, 0)]))]]), expect: [413] }),
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify(baseCase())], ["pdf", blob(NOT_IMAGES[0]![1])]]), expect: [415] }),
  fc.integer({ min: 17, max: 24 }).map((n) => ({ body: form([["case", JSON.stringify(baseCase())], ...Array.from({ length: n }, (_, i): [string, Blob] => [`f${i}`, blob(PNG)])]), expect: [400, 413] })),
  fc.constant<FuzzRequest>({ body: form([["case", JSON.stringify({ ...baseCase(), images: [{ id: "p", path: "/etc/passwd" }] })]]), expect: [400] }),
  // Hand-made bodies: broken boundaries, no closing delimiter, garbage.
  fc.tuple(fc.string({ maxLength: 40 }), fc.string({ maxLength: 200 })).map(([boundary, raw]) => ({
    body: raw,
    contentType: `multipart/form-data; boundary=${boundary}`,
    expect: [400, 413, 415],
  })),
  // Cut off before the closing delimiter.
  fc.constant<FuzzRequest>({ body: "--b\r\ncontent-disposition: form-data; name=\"case\"\r\n\r\n{\"question\":\"q\"}", contentType: "multipart/form-data; boundary=b", expect: [400] }),
  fc.constant<FuzzRequest>({ body: "--b\r\n\r\n\r\n--b--", contentType: "multipart/form-data; boundary=b", expect: [400] }),
  fc.constant<FuzzRequest>({ body: "case=%7B%7D", contentType: "multipart/form-data", expect: [400] }),
);

/** How the server reads a number in the query string (as JavaScript's Number() does). */
const queryInt = (raw: string, min: number, max: number): boolean => {
  const n = Number(raw);
  return Number.isInteger(n) && n >= min && n <= max;
};
/** A header value as it arrives: fetch strips the spaces and tabs around it. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** Content types, query parameters and headers around an otherwise good body. */
const envelope: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .constantFrom(
      ["text/plain", [415]],
      ["application/x-www-form-urlencoded", [415]],
      ["application/xml", [415]],
      ["image/png", [415]],
      ["application/octet-stream", [415]],
      ["", [415]],
      ["application/json; charset=utf-16", [415]],
      // Media types are case-insensitive.
      ["application/JSON", [202]],
      // Empty parameters are allowed (RFC 9110 §5.6.6: `*( OWS ";" OWS [ parameter ] )`).
      ["application/json;;;", [202]],
    )
    .map(([ct, expect]) => ({ body: JSON.stringify(baseCase()), contentType: ct, expect })),
  fc
    .oneof(fc.integer({ min: -5, max: 100 }).map(String), fc.string({ maxLength: 10 }), fc.constantFrom("1e3", "0x2", "NaN", "Infinity", "[]", "2&k=3"))
    .map((k) => json(baseCase(), queryInt(k, 1, 32) ? { query: `?k=${encodeURIComponent(k)}`, expect: [202] } : { query: `?k=${encodeURIComponent(k)}`, expect: [400], mentions: "query.k" })),
  fc
    .oneof(fc.integer({ min: -5, max: 20 }).map(String), fc.string({ maxLength: 10 }))
    .map((m) => json(baseCase(), queryInt(m, 0, 10) ? { query: `?maxRepairs=${encodeURIComponent(m)}`, expect: [202] } : { query: `?maxRepairs=${encodeURIComponent(m)}`, expect: [400], mentions: "query.maxRepairs" })),
  // Each key starts with a fresh uuid: a reused key is a replay (202 or 409), not a new case.
  fc.tuple(fc.uuid(), fc.string({ maxLength: 300 })).map(([uuid, rest]) => {
    const key = `${uuid}${rest.replace(/[\r\n]/g, "")}`;
    return json(baseCase(), { headers: { "idempotency-key": key }, expect: IDEMPOTENCY_KEY.test(key.replace(/[ \t]+$/, "")) ? [202] : [400] });
  }),
  fc.constantFrom("", "   ").map((key) => json(baseCase(), { headers: { "idempotency-key": key }, expect: [400] })),
  // Random bytes are never a case: not JSON, not UTF-8, or JSON that is no case object.
  fc.uint8Array({ maxLength: 300 }).map((u) => ({ body: new Uint8Array(u), contentType: "application/json", expect: [400] })),
  fc.constant<FuzzRequest>({ body: "", contentType: "application/json", expect: [400] }),
  fc.constant<FuzzRequest>({ body: '{"question":"q","question":"dup","__proto__":{"polluted":1}}', contentType: "application/json", expect: [400] }),
  fc.constant<FuzzRequest>({ body: '{"question":"q","constructor":{"prototype":{"polluted":1}}}', contentType: "application/json", expect: [400] }),
);

const valid: fc.Arbitrary<FuzzRequest> = validCase.map((c) => json(c, { query: "?k=1&maxRepairs=0", expect: [202] }));

// ---------------------------------------------------------------------------------------

describe("POST /diagnose under fuzzing", () => {
  const CATEGORIES: Array<[string, fc.Arbitrary<FuzzRequest>, number]> = [
    ["wrong types", wrongTypes, 450],
    ["huge strings", hugeStrings, 120],
    ["deep nesting", deepNesting, 200],
    ["bad base64", badBase64, 250],
    ["wrong MIME", wrongMime, 250],
    ["oversize images", oversizeImages, 80],
    ["decompression bombs and broken headers", bombs, 150],
    ["multipart variants", multipart, 250],
    ["content types, query and headers", envelope, 250],
    ["valid cases", valid, 120],
  ];
  for (const [name, arb, allRuns] of CATEGORIES) {
    const runs = Math.ceil(allRuns * SHARE);
    it(`${name}: ${runs} bodies, each a 4xx with a JSON message or (valid) a 202 and a stored case`, async () => {
      await fuzz(name, arb, runs);
    }, 120_000);
  }

  it("length limits: each string field at its limit is accepted, one character over is a 400 naming the field", async () => {
    const before = sent;
    for (const [field, limit, path] of FIELD_LIMITS) {
      await send("length limits", json(caseWithString(field, "x".repeat(limit)), { expect: [202] }));
      await send("length limits", json(caseWithString(field, "x".repeat(limit + 1)), { expect: [400], mentions: path }));
    }
    rows.push({
      suite: "abuse",
      scenario: "POST /diagnose length limits (question, notes, options, captions, image id, case id, sex, MIME type)",
      trials: sent - before,
      outcome: `at the limit: 202 ×${statusCounts.get("length limits")?.get(202) ?? 0}; one over: 400 naming the field ×${statusCounts.get("length limits")?.get(400) ?? 0}`,
      itemsLost: 0,
    });
  });

  it(`sent at least ${Math.floor(2_000 * SHARE)} bodies; the server never logged a 5xx; every accepted case reached a terminal state`, async () => {
    expect(sent).toBeGreaterThanOrEqual(Math.floor(2_000 * SHARE));
    // The widest fan-out a client may ask for: 32 rollouts listening on one case signal.
    const wide = await t.api("/diagnose?k=32&maxRepairs=0", { method: "POST", json: baseCase(), headers: { prefer: "respond-async" } });
    expect(wide.status).toBe(202);
    accepted.push(((await wide.json()) as { caseId: string }).caseId);
    expect(Object.prototype).not.toHaveProperty("polluted");
    const serverErrors = t.logs.lines().filter((l) => (l.level as number) >= 50);
    expect(serverErrors.map((l) => JSON.stringify(l).slice(0, 500))).toEqual([]);
    const unfinished = await until(
      async () => {
        const statuses = await Promise.all(accepted.map(async (id) => ((await (await t.api(`/cases/${id}`)).json()) as { status: string }).status));
        const open = accepted.filter((_, i) => !TERMINAL_STATUSES.includes(statuses[i] as never));
        return open.length === 0 ? open : undefined;
      },
      120_000,
      `${accepted.length} accepted cases to finish`,
    );
    expect(unfinished).toEqual([]);
    // No "possible memory leak" warnings from the fan-outs (docs/architecture.md#known-pitfalls), nor anything else.
    expect(warnings).toEqual([]);
    // Listed too: page through GET /cases.
    const listed = new Set<string>();
    let cursor: string | null = null;
    do {
      const page = (await (await t.api(`/cases?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)).json()) as { items: { caseId: string }[]; nextCursor: string | null };
      for (const i of page.items) listed.add(i.caseId);
      cursor = page.nextCursor;
    } while (cursor);
    const lost = accepted.filter((id) => !listed.has(id));
    rows.push({ suite: "abuse", scenario: "POST /diagnose fuzz: accepted cases afterwards", trials: accepted.length, outcome: `all ${accepted.length} accepted cases terminal; ${accepted.length - lost.length} of them listed by GET /cases`, itemsLost: lost.length });
    expect(lost).toEqual([]);
  }, 180_000);
});
