import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { medmmvCli } from "../support/medmmv-cli.js";
import { dicomFile, JPEG_BASELINE, LOSSLESS, syntheticCt, transcode } from "../core/intake/dicom/dicom-fixtures.js";
import { readFileMeta } from "../../src/core/intake/dicom/dataset-walk.js";
import { implicitUnderExplicit } from "../core/intake/dicom/second-opinion.js";

// The DICOM decoder runs in worker threads; a CLI command must still end when its work does.
const servers = useScriptedServers();
let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-dicom-exit-"));
  await writeFile(path.join(tmp, "ct.dcm"), syntheticCt().file);
  // The same CT written without the Part 10 preamble (its file meta group first), as older writers did.
  await writeFile(path.join(tmp, "ct-no-preamble.dcm"), syntheticCt().file.subarray(132));
  const mr = new Uint16Array(48 * 48).map((_, i) => (i * 37) % 4096);
  await writeFile(path.join(tmp, "mr.dcm"), dicomFile({ modality: "MR", rows: 48, columns: 48, stored: mr }));
  const rgb = dicomFile({ modality: "OT", rows: 16, columns: 16, frames: 2, stored: new Uint8Array(16 * 16 * 3 * 2).map((_, i) => (i * 11) % 256), rgb: true });
  await writeFile(path.join(tmp, "rgb-rle.dcm"), await transcode(rgb, LOSSLESS["RLE Lossless"]));
  const grey8 = dicomFile({ modality: "OT", rows: 32, columns: 32, stored: new Uint8Array(32 * 32).map((_, i) => i % 256) });
  const jpeg = await transcode(grey8, JPEG_BASELINE);
  await writeFile(path.join(tmp, "jpeg.dcm"), jpeg);
  // A secondary capture written in implicit VR under JPEG Baseline (an old writer's error).
  await writeFile(path.join(tmp, "sc-implicit.dcm"), implicitUnderExplicit(jpeg, readFileMeta(jpeg).end));
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

const env = () => ({ OPENAI_BASE_URL: servers.model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_SEARCH: "none", MEDMMV_CACHE: "off", MEDMMV_LOG_LEVEL: "silent" });
// Generous: a command that finishes exits at once; one that hangs is killed here (signal set).
const HANG = { timeoutMs: 90_000 };

describe("the CLI exits after a case with a DICOM image", () => {
  it.each(["ct.dcm", "ct-no-preamble.dcm", "mr.dcm", "rgb-rle.dcm", "jpeg.dcm", "sc-implicit.dcm"])("medmmv diagnose on %s exits 0 by itself", async (file) => {
    const caseFile = path.join(tmp, `${file}.json`);
    await writeFile(caseFile, JSON.stringify({ question: "What is the most likely diagnosis?", notes: "An adult with chest pain.", options: { A: "Pneumonia", B: "Myocardial infarction" }, images: [{ id: "scan", path: file }] }));
    const r = await medmmvCli(["diagnose", caseFile], env(), "", undefined, HANG);
    expect(r.signal, r.stderr.slice(-500)).toBeNull();
    expect(r.code, r.stderr.slice(-500)).toBe(0);
    // The model received the rendered DICOM, so the decoder's worker really ran.
    expect(servers.model.stats().log.some((c) => c.images > 0)).toBe(true);
  });

  it("medmmv eval on a dataset whose item carries a DICOM image exits 0 by itself", async () => {
    const input = path.join(tmp, "items.jsonl");
    await writeFile(input, JSON.stringify({ q: "Which is most likely?", choices: { A: "Pneumonia", B: "Myocardial infarction" }, label: "B", imgs: ["ct.dcm"] }) + "\n");
    const fieldMap = JSON.stringify({ question: "q", options: "choices", answer: "label", images: "imgs" });
    const r = await medmmvCli(["eval", "--dataset", "jsonl", "--input", input, "--images", tmp, "--field-map", fieldMap, "--method", "cot", "--out", path.join(tmp, "eval-out"), "--json"], env(), "", undefined, HANG);
    expect(r.signal, r.stderr.slice(-500)).toBeNull();
    expect(r.code, r.stderr.slice(-500)).toBe(0);
    expect(servers.model.stats().log.some((c) => c.images > 0)).toBe(true);
  });
});
