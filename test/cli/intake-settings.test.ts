/**
 * The CLI's commands read cases with the intake settings `serve` uses (intakeSettings): each
 * test sets one documented variable and shows the command obeyed it, so a command that stops
 * passing one fails here.
 */
import { createServer, type Server } from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { medmmvCli } from "../support/medmmv-cli.js";
import { dicomFile, syntheticCt } from "../core/intake/dicom/dicom-fixtures.js";

const servers = useScriptedServers();
let tmp: string;
let pacs: Server;
let pacsRoot: string;
const wado: string[] = [];

/** An MR of six 16×16 frames: MEDMMV_DICOM_MAX_FRAMES decides how many become pictures. */
const sixFrames = () => dicomFile({ modality: "MR", rows: 16, columns: 16, frames: 6, stored: new Uint16Array(16 * 16 * 6).map((_, i) => (i * 13) % 4000) });

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-cli-intake-"));
  await writeFile(path.join(tmp, "mr6.dcm"), sixFrames());
  const caseOf = (images: unknown[]) => JSON.stringify({ question: "What is the most likely diagnosis?", notes: "An adult with chest pain.", options: { A: "Pneumonia", B: "Myocardial infarction" }, images });
  await writeFile(path.join(tmp, "frames.json"), caseOf([{ id: "mr", path: "mr6.dcm" }]));
  // A loopback PACS of one CT instance (QIDO and WADO-RS).
  const ct = syntheticCt().file;
  pacs = createServer((req, res) => {
    if (req.url!.endsWith("/studies/2.25.1/series")) return void res.writeHead(200, { "content-type": "application/dicom+json" }).end(JSON.stringify([{ "0020000E": { vr: "UI", Value: ["2.25.10"] } }]));
    if (req.url!.endsWith("/instances")) return void res.writeHead(200, { "content-type": "application/dicom+json" }).end(JSON.stringify([{ "00080018": { vr: "UI", Value: ["2.25.91"] }, "00200013": { vr: "IS", Value: [1] } }]));
    wado.push(req.url!);
    const b = "medmmv-boundary";
    res.writeHead(200, { "content-type": `multipart/related; type="application/dicom"; boundary=${b}` });
    res.end(Buffer.concat([Buffer.from(`--${b}\r\nContent-Type: application/dicom\r\n\r\n`), ct, Buffer.from(`\r\n--${b}--\r\n`)]));
  });
  await new Promise<void>((r) => pacs.listen(0, "127.0.0.1", r));
  pacsRoot = `http://127.0.0.1:${(pacs.address() as { port: number }).port}/dicom-web`;
  await writeFile(path.join(tmp, "pacs.json"), caseOf([{ id: "ct", dicomweb: { server: pacsRoot, study: "2.25.1" } }]));
});
afterAll(async () => {
  await new Promise((r) => pacs.close(r));
  await rm(tmp, { recursive: true, force: true });
});

const env = (more: Record<string, string> = {}) => ({ OPENAI_BASE_URL: servers.model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_SEARCH: "none", MEDMMV_CACHE: "off", MEDMMV_LOG_LEVEL: "silent", ...more });
const HANG = { timeoutMs: 90_000 };
/** Most pictures any one model call carried since `from`. */
const mostImages = (from: number) => Math.max(0, ...servers.model.stats().log.slice(from).map((c) => c.images));

describe("the CLI passes the intake settings serve passes", () => {
  it("MEDMMV_DICOM_MAX_FRAMES=2 medmmv diagnose sends 2 frames (the default sends 4)", async () => {
    let from = servers.model.stats().log.length;
    const r = await medmmvCli(["diagnose", path.join(tmp, "frames.json")], env({ MEDMMV_DICOM_MAX_FRAMES: "2" }), "", undefined, HANG);
    expect(r.code, r.stderr.slice(-500)).toBe(0);
    expect(mostImages(from)).toBe(2);
    from = servers.model.stats().log.length;
    const d = await medmmvCli(["diagnose", path.join(tmp, "frames.json")], env(), "", undefined, HANG);
    expect(d.code, d.stderr.slice(-500)).toBe(0);
    expect(mostImages(from)).toBe(4);
  });

  it("MEDMMV_MAX_IMAGE_DECODED_BYTES refuses what it should from medmmv diagnose", async () => {
    // Two 16×16 RGBA renderings are 2048 bytes: a 1500-byte limit refuses the case before any model call.
    const r = await medmmvCli(["diagnose", path.join(tmp, "frames.json")], env({ MEDMMV_MAX_IMAGE_DECODED_BYTES: "1500", MEDMMV_DICOM_MAX_FRAMES: "2" }), "", undefined, HANG);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/limit is 1500 bytes/);
  });

  it("a server listed in MEDMMV_DICOMWEB_SERVERS is read by medmmv diagnose; unlisted, it is not contacted", async () => {
    const unlisted = await medmmvCli(["diagnose", path.join(tmp, "pacs.json")], env(), "", undefined, HANG);
    expect(unlisted.code).toBe(2);
    expect(unlisted.stderr).toMatch(/not in MEDMMV_DICOMWEB_SERVERS/);
    expect(wado).toHaveLength(0);
    const from = servers.model.stats().log.length;
    const r = await medmmvCli(["diagnose", path.join(tmp, "pacs.json")], env({ MEDMMV_DICOMWEB_SERVERS: pacsRoot }), "", undefined, HANG);
    expect(r.code, r.stderr.slice(-500)).toBe(0);
    expect(wado).toHaveLength(1);
    expect(mostImages(from)).toBe(1);
  });

  it("medmmv eval and medmmv chat take MEDMMV_DICOM_MAX_FRAMES too", async () => {
    const input = path.join(tmp, "items.jsonl");
    await writeFile(input, JSON.stringify({ q: "Which is most likely?", choices: { A: "Pneumonia", B: "Myocardial infarction" }, label: "B", imgs: ["mr6.dcm"] }) + "\n");
    const fieldMap = JSON.stringify({ question: "q", options: "choices", answer: "label", images: "imgs" });
    let from = servers.model.stats().log.length;
    const e = await medmmvCli(["eval", "--dataset", "jsonl", "--input", input, "--images", tmp, "--field-map", fieldMap, "--method", "cot", "--out", path.join(tmp, "eval-out"), "--json"], env({ MEDMMV_DICOM_MAX_FRAMES: "3" }), "", undefined, HANG);
    expect(e.code, e.stderr.slice(-500)).toBe(0);
    expect(mostImages(from)).toBe(3);
    from = servers.model.stats().log.length;
    const c = await medmmvCli(["chat", path.join(tmp, "frames.json")], env({ MEDMMV_DICOM_MAX_FRAMES: "3" }), "", undefined, HANG);
    expect(c.code, c.stderr.slice(-500)).toBe(0);
    expect(mostImages(from)).toBe(3);
  });
});
