import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClinicalCase } from "../../../src/core/contracts/clinical-case.js";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";

const LIMITS = { maxBytes: 1024 * 1024, maxPixels: 1_000_000, allowPath: false };

async function intakeError(pathway: unknown): Promise<{ code?: string; message: string }> {
  try {
    await prepareCase(ClinicalCase.parse({ question: "q", pathway }), LIMITS);
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error("intake accepted the pathway");
}

// Issue: `"pathway": "<absolute path>.json"` opened any file, and the 400 told whether it existed, the
// working directory, its top-level keys and JSON.parse snippets.
describe("pathways by id only: a request never names a file", () => {
  let dir: string;
  let planted: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-planted-"));
    planted = path.join(dir, "x.json");
    await writeFile(planted, JSON.stringify({ ...loadPathway("bone-marrow"), id: "x" }));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ["an absolute path of a planted, valid pathway file", () => planted],
    ["package.json", () => "package.json"],
    ["a relative path up the tree", () => "../../../../etc/x.json"],
    ["a missing absolute path", () => "/nonexistent/secret.json"],
    ["an id-shaped path", () => "pathways/bone-marrow"],
  ])("%s is refused with a 400 that reveals nothing of the file system", async (_name, ref) => {
    const e = await intakeError(ref());
    expect(e.code).toBe("INVALID_INPUT");
    expect(e.message).toMatch(/is not a pathway id/);
    for (const leak of [process.cwd(), dir, "ENOENT", "EACCES", "Unexpected token", "steps", "paths"]) expect(e.message).not.toContain(leak);
  });

  it("an unknown id lists the registry's ids only; a registry id and an inline pathway are accepted", async () => {
    const e = await intakeError("lung");
    expect(e.message).toMatch(/^unknown pathway "lung"; known pathways: bone-marrow/);
    expect(e.message).not.toContain(process.cwd());
    await expect(prepareCase(ClinicalCase.parse({ question: "q", pathway: "bone-marrow" }), LIMITS)).resolves.toMatchObject({ pathway: "bone-marrow" });
    const inline = { ...loadPathway("bone-marrow"), id: "inline-marrow" };
    await expect(prepareCase(ClinicalCase.parse({ question: "q", pathway: inline }), LIMITS)).resolves.toMatchObject({ pathway: { id: "inline-marrow" } });
  });
});
