// A whole slide from a real PACS: a pyramidal TIFF written by sharp (libvips), dicomized by Debian's
// OrthancWSIDicomizer, stored in Orthanc (DICOMweb plugin) and read by the product as a pyramid
// through a counting proxy that sees every frame request. Keeps a real port: Chromium loads the audit view.
import { createServer, request, type Server } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import type { LoadedImage } from "../../../src/core/contracts/clinical-case.js";
import { openReady, useChromium } from "../../support/browser.js";
import { recordingImageDoctor } from "./recording-scenario.js";
import { dicomizeTiff, startOrthanc, type OrthancServer } from "../../support/orthanc.js";
import { correlation } from "../../core/intake/dicom/second-opinion.js";
import { startTestServer, VIEW_ENV, type TestServer } from "./http-harness.js";

/** The slide: 6000 × 4000, the size the issue names (dicomizing it takes well under a second). */
const W = 6000;
const H = 4000;
let source: Buffer; // RGB, W × H
let orthanc: OrthancServer;
let proxy: Server;
let root: string;
/** Every frame request the product made: instance UID and frame numbers. */
const frameRequests: Array<{ instance: string; frames: number[] }> = [];
/** Each level's instance UID and frame count, from Orthanc's own QIDO answer. */
let levels: Array<{ uid: string; frames: number; columns: number }> = [];
let study: string;
let j2kStudy: string;
/** The dicomized Part 10 objects, one per level (finest first). */
let files: Buffer[] = [];
const calls: Array<{ text: string; images: string[] }> = [];
let t: TestServer;
const browser = useChromium();

/**
 * Bright glass with an elliptical piece of pink tissue; inside it, dark nuclei on a grid whose
 * density rises to the right, and broad colour gradients so the overview has structure.
 */
function syntheticSlide(): Buffer {
  const px = Buffer.alloc(W * H * 3);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const i = (y * W + x) * 3;
      const inside = ((x - 3000) / 2400) ** 2 + ((y - 2000) / 1500) ** 2 < 1;
      if (!inside) {
        px[i] = 242; px[i + 1] = 240; px[i + 2] = 245;
        continue;
      }
      const pitch = x > 3600 ? 24 : 64;
      const nucleus = ((x % pitch) - pitch / 2) ** 2 + ((y % pitch) - pitch / 2) ** 2 < 49;
      if (nucleus) {
        px[i] = 70; px[i + 1] = 40; px[i + 2] = 120;
      } else {
        px[i] = 200 + Math.round(30 * Math.sin(x / 400)); px[i + 1] = 120 + Math.round(40 * Math.cos(y / 300)); px[i + 2] = 170;
      }
    }
  }
  return px;
}

beforeAll(async () => {
  source = syntheticSlide();
  const dir = await mkdtemp(path.join(tmpdir(), "medmmv-slide-"));
  try {
    const tiff = path.join(dir, "slide.tiff");
    await sharp(source, { raw: { width: W, height: H, channels: 3 } }).tiff({ tile: true, pyramid: true, tileWidth: 256, tileHeight: 256, compression: "jpeg", quality: 90 }).toFile(tiff);
    orthanc = await startOrthanc();
    files = await dicomizeTiff(tiff);
    for (const file of files) await orthanc.store(file);
    // A second, smaller slide whose tiles are JPEG 2000 (re-encoded by the dicomizer): decoded by the decode pool.
    const small = path.join(dir, "small.tiff");
    await sharp(source, { raw: { width: W, height: H, channels: 3 } }).resize(1500, 1000, { fit: "fill" }).tiff({ tile: true, pyramid: true, tileWidth: 256, tileHeight: 256, compression: "jpeg", quality: 90 }).toFile(small);
    for (const file of await dicomizeTiff(small, ["--compression", "jpeg2000", "--reencode", "1"])) await orthanc.store(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  // The two slides are two studies: the large one is the one whose series holds six levels.
  const studies = (await (await fetch(`${orthanc.dicomweb}/studies?includefield=00201208`)).json()) as Array<Record<string, { Value: unknown[] }>>;
  const byInstances = [...studies].sort((a, b) => Number(b["00201208"]?.Value[0] ?? 0) - Number(a["00201208"]?.Value[0] ?? 0));
  study = String(byInstances[0]!["0020000D"]!.Value[0]);
  j2kStudy = String(byInstances[1]!["0020000D"]!.Value[0]);
  const series = (await (await fetch(`${orthanc.dicomweb}/studies/${study}/series`)).json()) as Array<Record<string, { Value: unknown[] }>>;
  const seriesUid = String(series[0]!["0020000E"]!.Value[0]);
  for (const i of (await (await fetch(`${orthanc.dicomweb}/studies/${study}/series/${seriesUid}/instances`)).json()) as Array<Record<string, { Value: unknown[] }>>) {
    const meta = ((await (await fetch(`${orthanc.dicomweb}/studies/${study}/series/${seriesUid}/instances/${String(i["00080018"]!.Value[0])}/metadata`)).json()) as Array<Record<string, { Value: unknown[] }>>)[0]!;
    levels.push({ uid: String(i["00080018"]!.Value[0]), frames: Number(meta["00280008"]!.Value[0]), columns: Number(meta["00480006"]!.Value[0]) });
  }
  levels = levels.sort((a, b) => b.columns - a.columns);

  // The counting proxy: forwards everything to Orthanc and notes each frame request.
  const target = new URL(orthanc.dicomweb);
  proxy = createServer((req, res) => {
    const m = /\/instances\/([0-9.]+)\/frames\/([0-9,]+)$/.exec(req.url ?? "");
    if (m) frameRequests.push({ instance: m[1]!, frames: m[2]!.split(",").map(Number) });
    const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  root = `http://127.0.0.1:${(proxy.address() as { port: number }).port}/dicom-web`;

  t = await startTestServer({
    scenario: recordingImageDoctor(calls),
    env: { ...VIEW_ENV, MEDMMV_DICOMWEB_SERVERS: root, MEDMMV_DICOMWEB_TIMEOUT_MS: "20000", MEDMMV_IMAGE_MODEL_LONG_SIDE: "1536" },
  });
}, 240_000);
afterAll(async () => {
  await t?.close();
  await new Promise((r) => (proxy ? proxy.close(r) : r(undefined)));
  await orthanc?.close();
});

function slideCase(question: string) {
  return {
    question,
    options: { A: "Normal marrow", B: "Acute leukaemia", C: "Aplastic anaemia" },
    images: [{ id: "slide", dicomweb: { server: root, study, accessToken: "pacs-token" } }],
  };
}

async function rgbOf(url: string): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(Buffer.from(url.replace(/^data:image\/\w+;base64,/, ""), "base64")).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** The source image (or a rectangle of it) scaled to `width` × `height`: the independent reference. */
async function reference(width: number, height: number, crop?: { x: number; y: number; width: number; height: number }): Promise<Buffer> {
  let img = sharp(source, { raw: { width: W, height: H, channels: 3 } });
  if (crop) img = img.extract({ left: crop.x, top: crop.y, width: crop.width, height: crop.height });
  return img.resize(width, height, { fit: "fill" }).raw().toBuffer();
}

async function storedImages(caseId: string): Promise<LoadedImage[]> {
  return ((await (await t.api(`/cases/${caseId}`)).json()) as { case: { images: LoadedImage[] } }).case.images;
}

describe("whole-slide images: OrthancWSIDicomizer → Orthanc → a pyramid read by frames", () => {
  it("sends the level that fits the model's size, assembled from its tiles, fetching only that level's frames", async () => {
    calls.length = 0;
    frameRequests.length = 0;
    const res = await t.api("/diagnose", { method: "POST", json: slideCase("What does this bone marrow biopsy show overall?") });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    const sent = calls[0]!.images;
    expect(sent).toHaveLength(1);
    const overview = await rgbOf(sent[0]!);
    // The 3000 × 2000 level (half of 6000 × 4000) is within 2 × 1536: read and scaled down to
    // 1536 × 1024, it keeps detail the 1500 × 1000 level lost.
    expect([overview.width, overview.height]).toEqual([1536, 1024]);
    const r = correlation(overview.data, await reference(1536, 1024));
    expect(r).toBeGreaterThanOrEqual(0.9);

    const used = levels.find((l) => l.columns === 3000)!;
    const fetched = frameRequests.flatMap((q) => q.frames.map((f) => `${q.instance}/${f}`));
    expect(new Set(frameRequests.map((q) => q.instance))).toEqual(new Set([used.uid]));
    expect(fetched.length).toBeLessThanOrEqual(used.frames);
    expect(new Set(fetched).size).toBe(fetched.length);

    const [stored] = await storedImages(result.caseId);
    expect(stored!.dicom!.wsi).toMatchObject({ role: "overview", totalColumns: 3000, totalRows: 2000, region: { x: 0, y: 0, width: 3000, height: 2000 }, overviewWidth: 1536, overviewHeight: 1024, levels: levels.length });
    expect(stored!.dicom!.wsi!.pixelSpacingMm![0]).toBeGreaterThan(0);
    expect(stored!.dicom!.wsi!.opticalPaths[0]).toMatchObject({ illumination: "Brightfield illumination" });
    expect(stored!.dicom!.wsi!.iccProfile).toMatch(/recorded, not applied/);
  }, 120_000);

  it("a question about cells adds regions at a finer level, chosen on tissue in focus, with their coordinates in provenance and on the audit view", async () => {
    calls.length = 0;
    frameRequests.length = 0;
    const res = await t.api("/diagnose", { method: "POST", json: slideCase("Estimate the cellularity and the proportion of blasts.") });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    const images = await storedImages(result.caseId);
    expect(images.map((i) => i.id)).toEqual(["slide", "slide-region1", "slide-region2", "slide-region3"]);
    expect(calls[0]!.images).toHaveLength(4);
    const full = levels[0]!;
    for (const [k, img] of images.slice(1).entries()) {
      const wsi = img.dicom!.wsi!;
      expect(wsi).toMatchObject({ role: "region", level: 0, totalColumns: W, totalRows: H, overviewId: "slide" });
      expect(wsi.region.width).toBe(512);
      // The regions lie in the dense right part of the tissue, where the nuclei are closest.
      const cx = wsi.region.x + wsi.region.width / 2;
      expect(cx).toBeGreaterThan(3600);
      // On tissue: the region's corners are inside the ellipse of tissue, never on the glass around it.
      for (const [x, y] of [[wsi.region.x, wsi.region.y], [wsi.region.x + 511, wsi.region.y], [wsi.region.x, wsi.region.y + 511], [wsi.region.x + 511, wsi.region.y + 511]] as const) {
        expect(((x - 3000) / 2400) ** 2 + ((y - 2000) / 1500) ** 2, `corner (${x}, ${y})`).toBeLessThan(1);
      }
      expect(wsi.selection).toMatch(/by focus .* mostly tissue/);
      expect(wsi.overviewRegion.x).toBe(Math.floor((wsi.region.x * 1536) / 6000));
      // The region is what the slide holds there (full resolution: the source itself).
      const got = await rgbOf(calls[0]!.images[k + 1]!);
      expect(correlation(got.data, await reference(512, 512, wsi.region))).toBeGreaterThanOrEqual(0.9);
    }
    // Frames of the two levels used only, each at most once per picture.
    const overviewLevel = levels.find((l) => l.columns === 3000)!;
    const fetched = frameRequests.flatMap((q) => q.frames.map(() => q.instance));
    expect(new Set(fetched)).toEqual(new Set([overviewLevel.uid, full.uid]));
    expect(fetched.length).toBeLessThanOrEqual(overviewLevel.frames + full.frames);
    // All tiles of the 3000 × 2000 level; at full resolution only the 2 × 2 tiles of each 512-pixel region.
    expect(fetched.filter((u) => u === overviewLevel.uid)).toHaveLength(overviewLevel.frames);
    expect(fetched.filter((u) => u === full.uid)).toHaveLength(3 * 4);

    const made = await t.api(`/cases/${result.caseId}/view-links`, { method: "POST", json: {} });
    const { url } = (await made.json()) as { url: string };
    const page = await browser().newPage();
    await openReady(page, t.base + url);
    const boxes = page.getByTestId("wsi-region");
    expect(await boxes.count()).toBe(3);
    expect(await page.getByTestId("dicom-provenance").first().innerText()).toContain("level 1 of");
    await page.close();
  }, 120_000);

  it("a whole-slide instance sent alone (one level, in the case's bytes) is read as a slide: overview at the model's size, regions within the level", async () => {
    calls.length = 0;
    // The 3000 × 2000 level: wider than the model reads, so its overview is resized, and regions come from the level itself.
    const level = files.find((f) => f.includes(Buffer.from([0x48, 0x00, 0x06, 0x00, 0x55, 0x4c, 0x04, 0x00, 0xb8, 0x0b, 0x00, 0x00])))!;
    expect(level).toBeDefined();
    const res = await t.api("/diagnose", { method: "POST", json: { ...slideCase("Are there mitoses or atypical nuclei?"), images: [{ id: "slide", mimeType: "application/dicom", data: level.toString("base64") }] } });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    const images = await storedImages(result.caseId);
    expect(images[0]!.dicom!.wsi).toMatchObject({ role: "overview", level: 0, levels: 1, totalColumns: 3000, totalRows: 2000, overviewWidth: 1536, overviewHeight: 1024, tiles: 96, levelFrames: 96 });
    const overview = await rgbOf(calls[0]!.images[0]!);
    expect([overview.width, overview.height]).toEqual([1536, 1024]);
    expect(correlation(overview.data, await reference(1536, 1024))).toBeGreaterThanOrEqual(0.9);
    expect(images.length).toBeGreaterThan(1);
    for (const [k, img] of images.slice(1).entries()) {
      const wsi = img.dicom!.wsi!;
      expect(wsi).toMatchObject({ role: "region", level: 0, totalColumns: 3000 });
      // The region at level 0 of this object is twice as coarse as the source: compare with the source's matching rectangle.
      const got = await rgbOf(calls[0]!.images[k + 1]!);
      const crop = { x: wsi.region.x * 2, y: wsi.region.y * 2, width: wsi.region.width * 2, height: wsi.region.height * 2 };
      expect(correlation(got.data, await reference(wsi.region.width, wsi.region.height, crop))).toBeGreaterThanOrEqual(0.9);
    }
  }, 120_000);

  it("a pathway whose steps ask about cells (bone-marrow) brings the regions too, for a question that does not", async () => {
    calls.length = 0;
    const res = await t.api("/diagnose", { method: "POST", json: { ...slideCase("What is the diagnosis?"), pathway: "bone-marrow" } });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    expect((await storedImages(result.caseId)).map((i) => i.dicom!.wsi!.role)).toEqual(["overview", "region", "region", "region"]);
  }, 120_000);

  it("a slide of JPEG 2000 tiles is decoded by the decode pool, tile by tile as stored", async () => {
    calls.length = 0;
    const res = await t.api("/diagnose", { method: "POST", json: { ...slideCase("What does this slide show overall?"), images: [{ id: "slide", dicomweb: { server: root, study: j2kStudy, accessToken: "pacs-token" } }] } });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    const [stored] = await storedImages(result.caseId);
    expect(stored!.dicom!.transferSyntaxUid).toMatch(/^1\.2\.840\.10008\.1\.2\.4\.9[01]$/);
    expect(stored!.dicom!.wsi).toMatchObject({ role: "overview", level: 0, totalColumns: 1500, totalRows: 1000, tiles: 24 });
    // OrthancWSIDicomizer labels its re-encoded JPEG 2000 tiles YBR_FULL_422 although they hold RGB: read as RGB, and said so.
    expect(stored!.dicom!.warnings?.[0]).toMatch(/labelled YBR_FULL_422.*read as RGB/);
    const overview = await rgbOf(calls[0]!.images[0]!);
    expect(correlation(overview.data, await reference(1500, 1000))).toBeGreaterThanOrEqual(0.9);
  }, 120_000);
});

