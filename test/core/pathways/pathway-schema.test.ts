import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { listPathways, loadPathway, parsePathway } from "../../../src/core/pathways/load-pathway.js";
import type { Pathway } from "../../../src/core/contracts/pathway.js";

function failure(fn: () => unknown): MedmmvError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(MedmmvError);
    return e as MedmmvError;
  }
  throw new Error("expected a MedmmvError");
}

const clone = (p: Pathway): Pathway => JSON.parse(JSON.stringify(p)) as Pathway;

describe("pathways/bone-marrow.json", () => {
  const bm = loadPathway("bone-marrow");

  it("has Dr-LLaVA's five steps with the ids docs/architecture.md#clinical-pathways-and-conversations fixes", () => {
    expect(bm.steps.map((s) => [s.id, s.categories.map((c) => c.id)])).toEqual([
      ["image-quality", ["high", "low"]],
      ["cell-quality", ["adequate", "blood", "clot"]],
      ["abnormality", ["normal", "abnormal", "inadequate"]],
      ["proliferation", ["blasts", "plasma-cells", "none", "inadequate"]],
      ["diagnosis", ["healthy", "aml", "mm", "inconclusive"]],
    ]);
  });

  it("has the five valid paths of the code's table (blood and clot under low image quality, not the figure's high)", () => {
    const rows = bm.paths.map((p) => [p.id, ...bm.steps.map((s) => p.sequence[s.id])]);
    expect(rows).toEqual([
      ["normal", "high", "adequate", "normal", "none", "healthy"],
      ["aml", "high", "adequate", "abnormal", "blasts", "aml"],
      ["mm", "high", "adequate", "abnormal", "plasma-cells", "mm"],
      ["blood", "low", "blood", "inadequate", "inadequate", "inconclusive"],
      ["clot", "low", "clot", "inadequate", "inadequate", "inconclusive"],
    ]);
    expect(bm.notes?.join(" ")).toMatch(/figure.*Clot and Blood under Image Quality = High/);
  });

  it("is listed and cached", () => {
    expect(listPathways()).toContain("bone-marrow");
    expect(loadPathway("bone-marrow")).toBe(bm);
  });

  it("a path that names a missing step is an error naming the path and the step", () => {
    const bad = clone(bm);
    bad.paths[1]!.sequence["cell-count"] = "high";
    const e = failure(() => parsePathway(bad));
    expect(e.code).toBe("INVALID_INPUT");
    expect(e.message).toContain('paths[1].sequence.cell-count: path "aml" names step "cell-count", which is not a step of this pathway');
  });

  it("a path that names a missing category is an error naming the step, the category and the allowed ones", () => {
    const bad = clone(bm);
    bad.paths[3]!.sequence["diagnosis"] = "leukaemia";
    const e = failure(() => parsePathway(bad));
    expect(e.message).toContain('paths[3].sequence.diagnosis: path "blood" gives step "diagnosis" the category "leukaemia"');
    expect(e.message).toContain("categories: healthy, aml, mm, inconclusive");
  });

  it("duplicate ids, the reserved no-match id and empty keywords are errors naming the entry", () => {
    const bad = clone(bm);
    bad.steps[1]!.categories[2]!.id = "blood";
    bad.steps[2]!.categories[0]!.id = "no-match";
    bad.steps[4]!.categories[1]!.keywords.push(" ");
    bad.paths[4]!.id = "blood";
    const e = failure(() => parsePathway(bad));
    expect(e.message).toContain('steps[1].categories[2].id: category id "blood" is used twice in step "cell-quality"');
    expect(e.message).toContain('steps[2].categories[0].id: "no-match" is reserved');
    expect(e.message).toContain(`steps[4].categories[1].keywords[${bm.steps[4]!.categories[1]!.keywords.length}]: a keyword must not be empty`);
    expect(e.message).toContain('paths[4].id: path id "blood" is used twice');
    const issues = (e.details as { issues: Array<{ path: string }> }).issues.map((i) => i.path);
    expect(issues).toContain("paths[4].id");
  });

  it("unknown fields and unknown or malformed ids are refused", () => {
    const bad = { ...clone(bm), colour: "red" } as unknown;
    expect(failure(() => parsePathway(bad)).message).toMatch(/colour/);
    expect(failure(() => loadPathway("lung")).message).toBe('unknown pathway "lung"; known pathways: bone-marrow');
    expect(failure(() => loadPathway("../etc/passwd")).message).toMatch(/is not a pathway id/);
  });
});

describe("registry files", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-pathways-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a malformed file in the configured directory is a clear error naming the pathway and the bad entry, never the file", async () => {
    const bm = clone(loadPathway("bone-marrow"));
    bm.id = "broken";
    bm.paths[0]!.sequence["abnormality"] = "weird";
    await writeFile(path.join(dir, "broken.json"), JSON.stringify(bm));
    await writeFile(path.join(dir, "not-json.json"), "{ steps: ");
    const e = failure(() => loadPathway("broken", { dir }));
    expect(e.message).toContain('pathway "broken" is not a valid pathway');
    expect(e.message).toContain('paths[0].sequence.abnormality: path "normal" gives step "abnormality" the category "weird"');
    expect(failure(() => loadPathway("not-json", { dir })).message).toBe('pathway "not-json" is not valid JSON');
    for (const m of [e.message, failure(() => loadPathway("not-json", { dir })).message]) expect(m).not.toContain(dir);
  });

  it("a file whose id differs from its name is refused; the configured directory adds to the bundled ids", async () => {
    const bm = clone(loadPathway("bone-marrow"));
    await writeFile(path.join(dir, "marrow.json"), JSON.stringify(bm));
    expect(failure(() => loadPathway("marrow", { dir })).message).toMatch(/has id "bone-marrow"; the id must equal the file name/);
    const own = { ...clone(bm), id: "marrow-local" };
    await writeFile(path.join(dir, "marrow-local.json"), JSON.stringify(own));
    expect(loadPathway("marrow-local", { dir }).id).toBe("marrow-local");
    expect(listPathways({ dir })).toEqual(expect.arrayContaining(["bone-marrow", "marrow-local"]));
    await writeFile(path.join(dir, "bone-marrow.json"), JSON.stringify(bm));
    expect(failure(() => loadPathway("bone-marrow", { dir })).message).toMatch(/both bundled and in the configured pathway directory/);
  });
});
