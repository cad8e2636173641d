// Uses app.inject: authentication, per-key isolation, 400/413/415 bodies and the code→status map need no socket.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { chestPain, json, KEY_B } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";
import { expectError } from "./expect-error.js";
import { pngWithCanvas } from "../../../src/scripted/image-bytes.js";

const b64 = (b: Buffer) => b.toString("base64");

// Small limits so the 413 paths are cheap to reach.
let t: InjectServer;
beforeAll(async () => {
  t = await startInjectServer({
    env: { MEDMMV_MAX_BODY_BYTES: String(64 * 1024), MEDMMV_MAX_IMAGE_BYTES: "4096", MEDMMV_MAX_IMAGE_PIXELS: "10000" },
  });
});
afterAll(() => t.close());

describe("authentication (401)", () => {
  it("refuses a request without a key, with a malformed header, or with an unknown key", async () => {
    const none = await t.api("/cases", { key: null });
    await expectError(none, 401, "UNAUTHORIZED", /missing API key: send the header `Authorization: Bearer <key>`/);
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="medmmv"');
    await expectError(await t.api("/cases", { key: null, headers: { authorization: "Basic abc" } }), 401, "UNAUTHORIZED", /malformed Authorization header/);
    await expectError(await t.api("/cases", { key: "test-key-alpha-0123456789abcdefghi" }), 401, "UNAUTHORIZED", /^invalid API key$/);
    await expectError(await t.api("/diagnose", { key: "nope", method: "POST", json: chestPain() }), 401, "UNAUTHORIZED");
    expect(t.openai.stats().total).toBe(0);
  });
});

describe("per-key isolation (404)", () => {
  it("a key sees only its own cases", async () => {
    const mine = DiagnosisResult.parse(await (await t.api("/diagnose", { method: "POST", json: chestPain() })).json());
    const id = mine.caseId;
    for (const [method, p] of [
      ["GET", `/cases/${id}`],
      ["GET", `/cases/${id}/events`],
      ["GET", `/cases/${id}/evidence-graph`],
      ["DELETE", `/cases/${id}`],
    ] as const) {
      await expectError(await t.api(p, { method, key: KEY_B }), 404, "NOT_FOUND", new RegExp(`case ${id} not found`));
    }
    const theirs = await json<{ items: { caseId: string }[] }>(await t.api("/cases", { key: KEY_B }));
    expect(theirs.items.map((i) => i.caseId)).not.toContain(id);
    const ours = await json<{ items: { caseId: string }[] }>(await t.api("/cases"));
    expect(ours.items.map((i) => i.caseId)).toContain(id);
    expect((await t.api(`/cases/${id}`)).status).toBe(200); // B's DELETE did nothing
    await expectError(await t.api("/cases/no-such-case"), 404, "NOT_FOUND", /case no-such-case not found/);
    await expectError(await t.api("/no/such/route"), 404, "NOT_FOUND", /no route GET \/no\/such\/route/);
  });
});

describe("bad input (400) says what to fix", () => {
  it("lists every schema problem with its path", async () => {
    const body = await expectError(
      await t.api("/diagnose", { method: "POST", json: { notes: "x", options: { a: "lower-case key" }, images: [{ id: "i1" }], extra: 1 } }),
      400,
      "INVALID_INPUT",
      /^invalid request body: /,
    );
    const paths = body.issues!.map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(["body.question", "body.images[0]"]));
    expect(paths.some((p) => p.startsWith("body.options"))).toBe(true);
    expect(body.message).toContain("body.question");
    expect(body.message).toContain("each image needs `data` (base64), `path` or `dicomweb`");
    expect(body.issues!.some((i) => /extra/.test(i.message))).toBe(true);
  });

  it("rejects malformed JSON without echoing the body", async () => {
    const res = await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/json" }, body: '{"question": "SECRET-TEXT' });
    const body = await expectError(res, 400, "INVALID_INPUT", /not valid JSON/);
    expect(JSON.stringify(body)).not.toContain("SECRET-TEXT");
  });

  it("rejects an empty body, image paths, bad base64, duplicate image ids and bad query values", async () => {
    await expectError(await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/json" } }), 400, "INVALID_INPUT", /body is empty/);
    await expectError(
      await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "x", path: "/etc/passwd" }] }) }),
      400,
      "INVALID_INPUT",
      /`path` is not accepted here; send the image bytes as base64/,
    );
    await expectError(await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "x", data: "@@@@" }] }) }), 400, "INVALID_INPUT", /not valid base64/);
    const png = b64(pngWithCanvas(4, 4));
    await expectError(
      await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "x", data: png }, { id: "x", data: png }] }) }),
      400,
      "INVALID_INPUT",
      /image id "x" appears more than once/,
    );
    const q = await expectError(await t.api("/diagnose?k=0", { method: "POST", json: chestPain() }), 400, "INVALID_INPUT", /query\.k/);
    expect(q.issues![0]!.path).toBe("query.k");
    await expectError(await t.api("/cases?limit=1000"), 400, "INVALID_INPUT", /query\.limit/);
    await expectError(await t.api("/diagnose", { method: "POST", json: chestPain(), headers: { "idempotency-key": "has space" } }), 400, "INVALID_INPUT", /headers\.idempotency-key/);
  });

  it("multipart without a `case` field, or naming a missing file, is a 400", async () => {
    const form = new FormData();
    form.set("notes", "x");
    await expectError(await t.api("/diagnose", { method: "POST", body: form }), 400, "INVALID_INPUT", /unexpected form field "notes"/);
    const noCase = new FormData();
    noCase.set("img", new Blob([new Uint8Array(pngWithCanvas(2, 2))]), "a.png");
    await expectError(await t.api("/diagnose", { method: "POST", body: noCase }), 400, "INVALID_INPUT", /no `case` field/);
    const missing = new FormData();
    missing.set("case", JSON.stringify(chestPain({ images: [{ id: "ct" } as never] })));
    await expectError(await t.api("/diagnose", { method: "POST", body: missing }), 400, "INVALID_INPUT", /images\[0\] \("ct"\) has no `data` and no file part named "ct"/);
    expect(t.openai.stats().byAgent.rollout ?? 0).toBeLessThanOrEqual(3); // only the isolation test's case ran
  });
});

describe("limits (413) and media types (415)", () => {
  it("refuses a body over the limit", async () => {
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ notes: "x".repeat(70 * 1024) }) });
    const body = await expectError(res, 413, "PAYLOAD_TOO_LARGE", /request body is larger than the limit of 65536 bytes/);
    expect(body.details).toEqual({ maxBytes: 65536 });
  });

  it("refuses an image over the byte limit, as base64 or as an uploaded file", async () => {
    const big = Buffer.concat([pngWithCanvas(10, 10), Buffer.alloc(6000)]);
    await expectError(await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "big", data: b64(big) }] }) }), 413, "PAYLOAD_TOO_LARGE", /image "big" is \d+ bytes; the limit is 4096 bytes/);
    const form = new FormData();
    form.set("case", JSON.stringify(chestPain()));
    form.set("big", new Blob([new Uint8Array(big)]), "big.png");
    await expectError(await t.api("/diagnose", { method: "POST", body: form }), 413, "PAYLOAD_TOO_LARGE", /larger than the limit of 4096 bytes per image/);
  });

  it("applies the body limit to multipart uploads too", async () => {
    const form = new FormData();
    form.set("case", JSON.stringify(chestPain()));
    for (let i = 0; i < 16; i++) form.set(`img${i}`, new Blob([new Uint8Array(Buffer.concat([pngWithCanvas(8, 8), Buffer.alloc(4000)]))]), `${i}.png`);
    await expectError(await t.api("/diagnose", { method: "POST", body: form }), 413, "PAYLOAD_TOO_LARGE", /request body is larger than the limit of 65536 bytes/);
  });

  it("refuses an image whose header claims too many pixels, before decoding it", async () => {
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "bomb", data: b64(pngWithCanvas(20_000, 20_000)) }] }) });
    const body = await expectError(res, 413, "PAYLOAD_TOO_LARGE", /image "bomb" is 20000×20000 \(400000000 pixels\); the limit is 10000 pixels/);
    expect(body.details).toMatchObject({ width: 20000, height: 20000, maxPixels: 10000 });
  });

  it("reads the image type from its bytes, not from the declared type (415)", async () => {
    const pdf = Buffer.from("%PDF-1.7\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n");
    const body = await expectError(
      await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "scan", mimeType: "image/png", data: b64(pdf) }] }) }),
      415,
      "UNSUPPORTED_MEDIA",
      /image "scan" is not a supported format; accepted formats are JPEG, PNG, GIF, WebP or DICOM Part 10/,
    );
    expect(body.details).toMatchObject({ imageId: "scan" });
    const form = new FormData();
    form.set("case", JSON.stringify(chestPain()));
    form.set("scan", new Blob([new Uint8Array(pdf)], { type: "image/png" }), "scan.png");
    await expectError(await t.api("/diagnose", { method: "POST", body: form }), 415, "UNSUPPORTED_MEDIA", /image "scan" is not a supported format/);
  });

  it("refuses other request content types (415)", async () => {
    await expectError(
      await t.api("/diagnose", { method: "POST", headers: { "content-type": "text/plain" }, body: "What is wrong?" }),
      415,
      "UNSUPPORTED_MEDIA",
      /send the case as application\/json or multipart\/form-data/,
    );
  });
});
