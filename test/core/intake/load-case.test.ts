import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCaseFile } from "../../../src/core/intake/load-case.js";
import { intakeSettings } from "../../../src/core/intake/intake-settings.js";
import { loadConfig } from "../../../src/core/config.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";

const IMAGES = fileURLToPath(new URL("../../../test/fixtures/benchmark-samples/images/", import.meta.url));
const LIMITS = { ...intakeSettings(loadConfig({})), maxBytes: 5 * 1024 * 1024, maxPixels: 40_000_000 };

async function rejection(p: Promise<unknown>): Promise<MedmmvError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(MedmmvError);
  return e as MedmmvError;
}

describe("loadCaseFile", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-case-"));
    await mkdir(path.join(dir, "case1", "img"), { recursive: true });
    await copyFile(path.join(IMAGES, "synpic26764.jpg"), path.join(dir, "case1", "img", "chest.jpg"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("resolves image paths against the case file's folder, not the working directory", async () => {
    const file = path.join(dir, "case1", "case.json");
    await writeFile(
      file,
      JSON.stringify({
        id: "vqa-1873",
        question: "Are the lungs hyperinflated?",
        images: [{ id: "img1", path: "img/chest.jpg", caption: "PA chest", mimeType: "image/png" }],
        metadata: { dataset: "vqa-rad" },
      }),
    );
    const c = await loadCaseFile(file, LIMITS);
    expect(c.id).toBe("vqa-1873");
    expect(c.metadata).toEqual({ dataset: "vqa-rad" });
    expect(c.images).toHaveLength(1);
    expect(c.images[0]).toMatchObject({ id: "img1", mimeType: "image/jpeg", width: 1024, height: 1192, caption: "PA chest" });
  });

  it("lists every schema problem with its JSON path in one INVALID_INPUT", async () => {
    const file = path.join(dir, "bad.json");
    await writeFile(
      file,
      JSON.stringify({
        question: "   ",
        options: { a: "lower-case key" },
        images: [{ id: "", data: "QUJD" }],
        extra: true,
      }),
    );
    const e = await rejection(loadCaseFile(file, LIMITS));
    expect(e.code).toBe("INVALID_INPUT");
    expect(e.message).toContain("question:");
    expect(e.message).toContain("images[0].id:");
    expect(e.message).toMatch(/options(\.a)?:/);
    expect(e.message).toContain("extra");
    const issues = (e.details?.["issues"] ?? []) as { path: string }[];
    expect(issues.length).toBeGreaterThanOrEqual(4);
  });

  it("reports invalid JSON and unreadable files as INVALID_INPUT", async () => {
    const file = path.join(dir, "broken.json");
    await writeFile(file, '{"question": "x",');
    const e1 = await rejection(loadCaseFile(file, LIMITS));
    expect(e1.code).toBe("INVALID_INPUT");
    expect(e1.message).toContain("not valid JSON");

    const e2 = await rejection(loadCaseFile(path.join(dir, "absent.json"), LIMITS));
    expect(e2.code).toBe("INVALID_INPUT");
    expect(e2.message).toContain("ENOENT");
  });

  it("passes image errors through (missing image file)", async () => {
    const file = path.join(dir, "case1", "missing.json");
    await writeFile(file, JSON.stringify({ question: "q?", images: [{ id: "i", path: "img/none.jpg" }] }));
    const e = await rejection(loadCaseFile(file, LIMITS));
    expect(e.code).toBe("INVALID_INPUT");
    expect(e.message).toContain(path.join(dir, "case1", "img", "none.jpg"));
  });

  it("gives a case without an id a fresh one", async () => {
    const file = path.join(dir, "noid.json");
    await writeFile(file, JSON.stringify({ question: "What is the diagnosis?" }));
    const c = await loadCaseFile(file, LIMITS);
    expect(c.id).toMatch(/^case-/);
    expect(c.images).toEqual([]);
  });
});

describe("loadCaseFile reads a FHIR Bundle as the API does", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-fhir-case-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a Bundle file becomes its case: notes from its resources, age and sex from its Patient", async () => {
    const file = path.join(dir, "bundle.json");
    await copyFile(fileURLToPath(new URL("../../../test/fixtures/fhir/synthetic-stemi.json", import.meta.url)), file);
    const c = await loadCaseFile(file, LIMITS);
    expect(c.notes).toContain("Troponin I 2.4 ng/mL");
    expect(c.patient?.sex).toBe("male");
    expect((c.metadata?.fhir as { bundleType?: string }).bundleType).toBe("collection");
  });

  it("another FHIR resource is refused saying a Bundle is expected, not 'Unrecognized keys'", async () => {
    const file = path.join(dir, "patient.json");
    await writeFile(file, JSON.stringify({ resourceType: "Patient", id: "p" }));
    const e = await rejection(loadCaseFile(file, LIMITS));
    expect(e.message).toMatch(/expected a Bundle, got a Patient/);
  });
});
