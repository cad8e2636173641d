/**
 * An enhanced PET: a Legacy Converted Enhanced PET object (PS3.3 A.72) made by
 * test/fixtures/dicom-scanners/make-enhanced-pet.py from seven REAL slices of a GE Discovery ST
 * FDG PET (TCIA Soft-tissue-Sarcoma, via oncoray/mirp; sources in the fixtures' README). As PET
 * scanners write them, every slice has its own RescaleSlope (0.26 to 1.71 here: each slice's
 * hottest pixel is stored near 32767), so the converted object carries a Pixel Value
 * Transformation per frame. A frame read with another frame's slope is a wrong picture; and a
 * window per frame's own range would paint every slice's maximum white, whatever its activity.
 * Our rendering of each frame is checked against pydicom's reading of the same object, each
 * frame's stored values times its own slope, under the window the renderer chose.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareCase } from "../../../../src/core/intake/case-intake.js";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { correlation, ourPixels, PYTHON, secondOpinionMissing, standardReading } from "./second-opinion.js";

const run = promisify(execFile);
const FIXTURES = path.join(import.meta.dirname, "../../../fixtures/dicom-scanners");
const PET = readFileSync(path.join(FIXTURES, "legacy-enhanced-pet.dcm"));
const SUV = readFileSync(path.join(FIXTURES, "legacy-enhanced-pet-suv.dcm"));
const renderFile = (file: Buffer, maxDicomFrames: number) => prepareImages({ id: "pet", data: file.toString("base64") }, { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false, maxDicomFrames });
const render = (maxDicomFrames: number) => renderFile(PET, maxDicomFrames);

/** pydicom's reading of every frame: its own Pixel Value Transformation (Per-frame Functional Groups) and its stored values. */
const FRAMES_SCRIPT = `
import json, sys
import pydicom
ds = pydicom.dcmread(sys.argv[1])
a = ds.pixel_array.reshape((int(ds.NumberOfFrames), -1)).astype("int64")
out = []
for k, item in enumerate(ds.PerFrameFunctionalGroupsSequence):
    pvt = item.PixelValueTransformationSequence[0]
    out.append({"slope": float(pvt.RescaleSlope), "intercept": float(pvt.RescaleIntercept), "type": pvt.RescaleType, "stored": a[k].tolist()})
print(json.dumps(out))
`;

interface PydicomFrame {
  slope: number;
  intercept: number;
  type: string;
  stored: number[];
}

/** The DICOM linear VOI function (PS3.3 C.11.2.1.2.1) to 8 bits. */
function linear(values: number[], { center, width }: { center: number; width: number }): number[] {
  return values.map((v) => Math.min(255, Math.max(0, ((v - (center - 0.5)) / (width - 1) + 0.5) * 255)));
}

const meanDiff = (a: number[], b: number[]) => a.reduce((s, x, i) => s + Math.abs(x - b[i]!), 0) / a.length;

const missing = secondOpinionMissing();

/** pydicom's frames of `file` (written to `dir`). */
async function readFrames(dir: string, file: Buffer, name: string): Promise<PydicomFrame[]> {
  const at = path.join(dir, `${name}.dcm`);
  await writeFile(at, file);
  const { stdout } = await run(PYTHON, ["-c", FRAMES_SCRIPT, at], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as PydicomFrame[];
}

/** Frame k's values in the object's units: its stored values times its own slope (or frame `slopeOf`'s), plus its intercept. */
function valuesOf(frames: PydicomFrame[], k: number, slopeOf = k): number[] {
  return frames[k]!.stored.map((v) => v * frames[slopeOf]!.slope + frames[slopeOf]!.intercept);
}

/** The window spanning frames `ks`' values, lowest to highest. */
function rangeOf(frames: PydicomFrame[], ks: number[]): { center: number; width: number } {
  const lo = Math.min(...ks.map((k) => Math.min(...valuesOf(frames, k))));
  const hi = Math.max(...ks.map((k) => Math.max(...valuesOf(frames, k))));
  return { center: (lo + hi) / 2, width: hi - lo };
}

describe.skipIf(missing !== null)("a Legacy Converted Enhanced PET of real slices, each frame with its own rescale slope", () => {
  let dir: string;
  let frames: PydicomFrame[];
  /** Frame k's activity (Bq/ml). */
  const activity = (k: number, slopeOf = k) => valuesOf(frames, k, slopeOf);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-enhanced-pet-"));
    frames = await readFrames(dir, PET, "pet");
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("the fixture is what a PET scanner's slices make: seven frames in Bq/ml, each with a slope of its own", () => {
    expect(frames).toHaveLength(7);
    expect(frames.every((f) => f.type === "BQML")).toBe(true);
    expect(new Set(frames.map((f) => f.slope)).size).toBe(7);
    // Each slice's hottest pixel is stored near the top of the range: stored values alone say nothing of activity.
    for (const f of frames) expect(Math.max(...f.stored)).toBeGreaterThan(32000);
  });

  it("every frame is its stored values times its OWN slope, under one activity scale shared by the frames sent: r ≥ 0.99 and mean difference ≤ 1 against pydicom", async () => {
    const imgs = await render(16);
    expect(imgs.map((i) => i.dicom!.frame)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const shared = rangeOf(frames, [0, 1, 2, 3, 4, 5, 6]);
    const standard = await standardReading(dir, PET, "pet-all", shared);
    for (const [k, img] of imgs.entries()) {
      const w = img.dicom!.window!;
      expect(w.source).toBe("PET activity range of the frames sent");
      expect(w.center).toBeCloseTo(shared.center, 0);
      expect(w.width).toBeCloseTo(shared.width, 0);
      expect(img.caption).toContain(`frame ${k + 1} of 7 (stack 1, position `);
      const ours = await ourPixels(img.data, 1);
      const right = linear(activity(k), shared);
      expect(correlation(ours, right), `frame ${k + 1}`).toBeGreaterThanOrEqual(0.99);
      expect(meanDiff(ours, right), `frame ${k + 1}`).toBeLessThanOrEqual(1);
      // pydicom's own functional-group reading (second-opinion.ts) agrees.
      expect(correlation(ours, standard[k]!), `frame ${k + 1}`).toBeGreaterThanOrEqual(0.99);
      // The same frame with the first frame's slope is a different picture, which this test tells apart.
      if (Math.abs(frames[k]!.slope / frames[0]!.slope - 1) > 0.2) expect(meanDiff(ours, linear(activity(k, 0), shared)), `frame ${k + 1}`).toBeGreaterThan(3);
    }
  });

  it("a slice of low activity stays dark next to a hot one (a window per frame would paint both maxima white)", async () => {
    const imgs = await render(16);
    const maxGrey = await Promise.all(imgs.map(async (i) => Math.max(...(await ourPixels(i.data, 1)))));
    const maxActivity = frames.map((_, k) => Math.max(...activity(k)));
    const hottest = maxActivity.indexOf(Math.max(...maxActivity));
    const coldest = maxActivity.indexOf(Math.min(...maxActivity));
    expect(maxGrey[hottest]).toBe(255);
    // Grey in proportion to activity: 8,486 Bq/ml of 56,164 is about 38 of 255.
    expect(Math.abs(maxGrey[coldest]! - (255 * maxActivity[coldest]!) / maxActivity[hottest]!)).toBeLessThanOrEqual(2);
  });

  it("sampled frames (MEDMMV_DICOM_MAX_FRAMES=3) are 1, 4 and 7, say so, and share the scale of those three", async () => {
    const imgs = await render(3);
    expect(imgs.map((i) => [i.id, i.dicom!.frame, i.dicom!.frames])).toEqual([["pet-frame1", 1, 7], ["pet-frame4", 4, 7], ["pet-frame7", 7, 7]]);
    expect(imgs[1]!.caption).toContain("frame 4 of 7 (stack 1, position 133)");
    const shared = rangeOf(frames, [0, 3, 6]);
    for (const [n, img] of imgs.entries()) {
      const k = [0, 3, 6][n]!;
      expect(img.dicom!.window!.width).toBeCloseTo(shared.width, 0);
      expect(correlation(await ourPixels(img.data, 1), linear(activity(k), shared)), `frame ${k + 1}`).toBeGreaterThanOrEqual(0.99);
    }
  });

  it("one frame sent (MEDMMV_DICOM_MAX_FRAMES=1) is the middle one, with its own slope and its own range", async () => {
    const [img, ...rest] = await render(1);
    expect(rest).toHaveLength(0);
    expect([img!.id, img!.dicom!.frame, img!.dicom!.frames]).toEqual(["pet", 4, 7]);
    const own = rangeOf(frames, [3]);
    expect(img!.dicom!.window).toMatchObject({ source: "frame value range" });
    expect(img!.dicom!.window!.width).toBeCloseTo(own.width, 0);
    expect(correlation(await ourPixels(img!.data, 1), linear(activity(3), own))).toBeGreaterThanOrEqual(0.99);
  });
});

/** The object with a Frame VOI LUT added to its Shared Functional Groups, by pydicom. */
const ADD_WINDOW_SCRIPT = `
import sys
import pydicom
from pydicom.dataset import Dataset
from pydicom.sequence import Sequence
ds = pydicom.dcmread(sys.argv[1])
voi = Dataset()
voi.WindowCenter, voi.WindowWidth = sys.argv[3], sys.argv[4]
ds.SharedFunctionalGroupsSequence[0].FrameVOILUTSequence = Sequence([voi])
ds.save_as(sys.argv[2])
`;

describe.skipIf(missing !== null)("the same scan in SUV (slopes of 5e-5 to 2e-4, which the renderer library would replace by 1)", () => {
  let dir: string;
  let frames: PydicomFrame[];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-enhanced-pet-suv-"));
    frames = await readFrames(dir, SUV, "suv");
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("is in SUV (g/ml) with every slope under 0.1", () => {
    expect(frames.every((f) => f.type === "GML" && f.slope > 0 && f.slope < 0.001)).toBe(true);
  });

  it("every frame in SUV under the shared activity scale, the window reported in SUV: r ≥ 0.99 and mean difference ≤ 1", async () => {
    const imgs = await renderFile(SUV, 16);
    const shared = rangeOf(frames, [0, 1, 2, 3, 4, 5, 6]);
    expect(shared.width).toBeLessThan(10);
    for (const [k, img] of imgs.entries()) {
      expect(img.dicom!.window!.source).toBe("PET activity range of the frames sent");
      expect(img.dicom!.window!.width).toBeCloseTo(shared.width, 2);
      expect(img.dicom!.window!.center).toBeCloseTo(shared.center, 2);
      const ours = await ourPixels(img.data, 1);
      const right = linear(valuesOf(frames, k), shared);
      expect(correlation(ours, right), `frame ${k + 1}`).toBeGreaterThanOrEqual(0.99);
      expect(meanDiff(ours, right), `frame ${k + 1}`).toBeLessThanOrEqual(1);
    }
  });

  it("a window in SUV (a Frame VOI LUT of SUV 0–6, added to the object) is applied in SUV, as pydicom applies it", async () => {
    const src = path.join(dir, "suv-in.dcm");
    const out = path.join(dir, "suv-window.dcm");
    await writeFile(src, SUV);
    await run(PYTHON, ["-c", ADD_WINDOW_SCRIPT, src, out, "3", "6"]);
    const windowed = readFileSync(out);
    const imgs = await renderFile(windowed, 16);
    const standard = await standardReading(dir, windowed, "suv-window");
    for (const [k, img] of imgs.entries()) {
      expect(img.dicom!.window).toEqual({ center: 3, width: 6, source: "frame VOI LUT (functional groups)" });
      const ours = await ourPixels(img.data, 1);
      expect(correlation(ours, standard[k]!), `frame ${k + 1}`).toBeGreaterThanOrEqual(0.99);
      expect(meanDiff(ours, standard[k]!), `frame ${k + 1}`).toBeLessThanOrEqual(1);
    }
  });
});

/** The raw enhanced PET's seven source slices, as the scanner wrote them (classic PET Image Storage, a slope each). */
const SLICES = ["1-001", "1-045", "1-089", "1-133", "1-177", "1-221", "1-265"].map((n) => readFileSync(path.join(FIXTURES, "pet-slices", `${n}.dcm`)));

describe.skipIf(missing !== null)("the same seven slices as a classic PET series read from a PACS (DICOMweb), one instance each", () => {
  let server: Server;
  let root: string;
  let dir: string;
  let frames: PydicomFrame[];
  const uids: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-pet-series-"));
    frames = await readFrames(dir, PET, "pet");
    // The SOP Instance UIDs, as a QIDO search answers them (PS3.18 10.6: SOPInstanceUID and InstanceNumber per instance).
    await Promise.all(SLICES.map((s, k) => writeFile(path.join(dir, `slice-${k}.dcm`), s)));
    const { stdout } = await run(PYTHON, ["-c", "import json,sys,pydicom; print(json.dumps([pydicom.dcmread(f, stop_before_pixels=True).SOPInstanceUID for f in sys.argv[1:]]))", ...SLICES.map((_, k) => path.join(dir, `slice-${k}.dcm`))]);
    uids.push(...(JSON.parse(stdout) as string[]));
    // WADO-RS answers an instance as multipart/related; type="application/dicom" (PS3.18 10.4).
    server = createServer((req, res) => {
      const url = req.url ?? "";
      const json = (body: unknown) => {
        res.writeHead(200, { "content-type": "application/dicom+json" });
        res.end(JSON.stringify(body));
      };
      if (url.endsWith("/studies/2.25.1/series")) return json([{ "0020000E": { vr: "UI", Value: ["2.25.10"] }, "00080060": { vr: "CS", Value: ["PT"] } }]);
      if (url.endsWith("/instances")) return json(uids.map((uid, k) => ({ "00080018": { vr: "UI", Value: [uid] }, "00080016": { vr: "UI", Value: ["1.2.840.10008.5.1.4.1.1.128"] }, "00200013": { vr: "IS", Value: [[1, 45, 89, 133, 177, 221, 265][k]] } })));
      const k = uids.findIndex((uid) => url.endsWith(`/instances/${uid}`));
      if (k === -1) {
        res.writeHead(404);
        return res.end();
      }
      const b = "medmmv-boundary";
      res.writeHead(200, { "content-type": `multipart/related; type="application/dicom"; boundary=${b}` });
      res.end(Buffer.concat([Buffer.from(`--${b}\r\nContent-Type: application/dicom\r\n\r\n`), SLICES[k]!, Buffer.from(`\r\n--${b}--\r\n`)]));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    root = `http://127.0.0.1:${(server.address() as { port: number }).port}/dicom-web`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await rm(dir, { recursive: true, force: true });
  });

  it("the slices share one activity scale, each with its own slope, and come out as the enhanced object's frames do (within one grey level)", async () => {
    const { images: imgs } = await prepareCase({ question: "Any FDG-avid lesion?", images: [{ id: "pt", dicomweb: { server: root, study: "2.25.1" } }] }, { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false, maxDicomFrames: 4, dicomweb: { servers: [root], maxInstances: 7, timeoutMs: 5000, attempts: 1 } });
    expect(imgs.map((i) => i.id)).toEqual(["pt-1", "pt-2", "pt-3", "pt-4", "pt-5", "pt-6", "pt-7"]);
    const shared = rangeOf(frames, [0, 1, 2, 3, 4, 5, 6]);
    const enhanced = await render(16);
    for (const [k, img] of imgs.entries()) {
      const w = img.dicom!.window!;
      expect(w.source).toBe("PET activity range of the series' instances sent");
      expect(w.width).toBeCloseTo(shared.width, 0);
      expect(img.caption).toContain(`window C${w.center}/W${w.width} (PET activity range of the series' instances sent)`);
      const ours = await ourPixels(img.data, 1);
      const right = linear(valuesOf(frames, k), shared);
      expect(correlation(ours, right), `slice ${k + 1}`).toBeGreaterThanOrEqual(0.99);
      expect(meanDiff(ours, right), `slice ${k + 1}`).toBeLessThanOrEqual(1);
      const frame = await ourPixels(enhanced[k]!.data, 1);
      expect(Math.max(...ours.map((g, i) => Math.abs(g - frame[i]!))), `slice ${k + 1}`).toBeLessThanOrEqual(1);
    }
  });
});

describe.skipIf(missing !== null)("the same seven slices sent as seven images of one case", () => {
  let dir: string;
  let frames: PydicomFrame[];
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-pet-case-"));
    frames = await readFrames(dir, PET, "pet");
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("slices of one series share the series' activity scale; a CT beside them keeps its own window", async () => {
    const c = await prepareCase(
      { question: "Any FDG-avid lesion?", images: [...SLICES.map((s, k) => ({ id: `s${k + 1}`, data: s.toString("base64") })), { id: "ect", data: readFileSync(path.join(FIXTURES, "enhanced-ct.dcm")).toString("base64") }] },
      { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false, maxDicomFrames: 1 },
    );
    expect(c.images.map((i) => i.id)).toEqual(["s1", "s2", "s3", "s4", "s5", "s6", "s7", "ect"]);
    const shared = rangeOf(frames, [0, 1, 2, 3, 4, 5, 6]);
    for (const [k, img] of c.images.slice(0, 7).entries()) {
      expect(img.dicom!.window!.source).toBe("PET activity range of the series' instances sent");
      expect(img.dicom!.window!.width).toBeCloseTo(shared.width, 0);
      expect(meanDiff(await ourPixels(img.data, 1), linear(valuesOf(frames, k), shared)), `slice ${k + 1}`).toBeLessThanOrEqual(1);
    }
    expect(c.images[7]!.dicom!.window).toEqual({ center: 49, width: 102, source: "frame VOI LUT (functional groups)" });
  });
});
