/**
 * A second opinion on a rendering: pydicom (Debian's python3-pydicom, under /usr/bin/python3)
 * reads the same object, applies the modality LUT and, when given, the same VOI window, and
 * its pixels are correlated with ours. Objects are made from the synthetic fixtures with
 * Debian's DICOM tools (dcmtk's dcmconv, dcmcjpeg, dcmcrle).
 */
import { execFile, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import sharp from "sharp";

const run = promisify(execFile);
export const PYTHON = "/usr/bin/python3";

/** Why the second opinion cannot be had on this machine, or null. */
/**
 * Why the pydicom/DCMTK second opinion cannot run here (null: it can), for `describe.skipIf`.
 * Skipped only where the tools are missing, never in CI: .ci/run installs them, and a silent skip
 * there would hide the check, so under CI a missing tool fails the file instead.
 */
export function secondOpinionMissing(): string | null {
  const missing = secondOpinionToolMissing();
  if (missing !== null && process.env.CI) throw new Error(`the pydicom second opinion cannot run: ${missing}`);
  return missing;
}

function secondOpinionToolMissing(): string | null {
  if (!existsSync(PYTHON)) return "/usr/bin/python3 is missing (apt-get install python3-pydicom python3-numpy)";
  if (spawnSync(PYTHON, ["-c", "import pydicom, numpy"]).status !== 0) return "pydicom or numpy is missing under /usr/bin/python3 (apt-get install python3-pydicom python3-numpy)";
  for (const tool of ["dcmconv", "dcmcjpeg", "dcmcjpls", "dcmcrle", "dcmj2pnm"]) if (!["/usr/bin", "/usr/local/bin"].some((d) => existsSync(path.join(d, tool)))) return `${tool} is missing (apt-get install dcmtk)`;
  return null;
}

/** `input` (written to `dir`) converted by a Debian DICOM tool with `args`; the result's bytes. */
export async function debianTool(dir: string, tool: "dcmconv" | "dcmcjpeg" | "dcmcjpls" | "dcmcrle", args: string[], input: Buffer, name: string): Promise<Buffer> {
  const src = path.join(dir, `${name}-in.dcm`);
  const out = path.join(dir, `${name}.dcm`);
  await writeFile(src, input);
  await run(tool, [...args, src, out]);
  return readFile(out);
}

const SCRIPT = `
import json, sys, warnings
import pydicom
from pydicom.pixel_data_handlers.util import apply_modality_lut, apply_voi_lut
warnings.simplefilter("ignore")
ds = pydicom.dcmread(sys.argv[1])
a = ds.pixel_array.astype("float64")
frames = int(getattr(ds, "NumberOfFrames", 1) or 1)
if ds.SamplesPerPixel == 1:
    a = apply_modality_lut(a, ds)
    if len(sys.argv) > 2:
        ds.WindowCenter, ds.WindowWidth = float(sys.argv[2]), float(sys.argv[3])
        a = apply_voi_lut(a, ds)
a = a.reshape((frames, -1))
print(json.dumps([f.tolist() for f in a]))
`;

/** pydicom's pixels of every frame, after the modality LUT and (for greyscale, when given) the VOI window. */
export async function pydicomFrames(dir: string, file: Buffer, name: string, window?: { center: number; width: number }): Promise<number[][]> {
  const at = path.join(dir, `${name}-pydicom.dcm`);
  await writeFile(at, file);
  const { stdout } = await run(PYTHON, ["-c", SCRIPT, at, ...(window ? [String(window.center), String(window.width)] : [])], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as number[][];
}

/** Our rendering's pixels: grey (one channel) or RGB, as sent to the model. */
export async function ourPixels(pngBase64: string, channels: 1 | 3): Promise<number[]> {
  const { data, info } = await sharp(Buffer.from(pngBase64, "base64")).raw().toBuffer({ resolveWithObject: true });
  return Array.from({ length: info.width * info.height * channels }, (_, i) => (channels === 1 ? data[i * info.channels]! : data[Math.floor(i / 3) * info.channels + (i % 3)]!));
}

/** Pearson's correlation of two equally long series. */
export function correlation(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length || a.length === 0) throw new Error(`series of ${a.length} and ${b.length} values`);
  // Indexed loops over any array-like (a decoder's Buffer too): a whole slide's pixels are
  // millions of values, and copying them into arrays first cost the WSI tests seconds of CPU.
  const mean = (x: ArrayLike<number>) => {
    let s = 0;
    for (let i = 0; i < x.length; i++) s += x[i]!;
    return s / x.length;
  };
  const ma = mean(a);
  const mb = mean(b);
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i]! - ma) * (b[i]! - mb);
    da += (a[i]! - ma) ** 2;
    db += (b[i]! - mb) ** 2;
  }
  return num / Math.sqrt(da * db);
}

/**
 * An explicit-VR little endian object with its dataset rewritten in implicit VR but its
 * transfer syntax left as it was: the writer's error pydicom and DCMTK read with a warning.
 * For flat datasets (no sequences), which is what the fixtures are.
 */
export function implicitUnderExplicit(file: Buffer, datasetStart: number): Buffer {
  const LONG = new Set(["OB", "OD", "OF", "OL", "OV", "OW", "SQ", "SV", "UC", "UN", "UR", "UT", "UV"]);
  const out: Buffer[] = [file.subarray(0, datasetStart)];
  let p = datasetStart;
  while (p < file.length) {
    const vr = file.toString("latin1", p + 4, p + 6);
    if (vr === "SQ") throw new Error("this fixture writer takes flat datasets only");
    const long = LONG.has(vr);
    const len = long ? file.readUInt32LE(p + 8) : file.readUInt16LE(p + 6);
    const h = Buffer.alloc(8);
    file.copy(h, 0, p, p + 4);
    h.writeUInt32LE(len, 4);
    out.push(h);
    p += long ? 12 : 8;
    if (len === 0xffffffff) {
      // Encapsulated pixel data: its items, to the sequence delimiter, as they are.
      const end = file.indexOf(Buffer.from([0xfe, 0xff, 0xdd, 0xe0]), p) + 8;
      out.push(file.subarray(p, end));
      p = end;
    } else {
      out.push(file.subarray(p, p + len));
      p += len;
    }
  }
  return Buffer.concat(out);
}

const STANDARD_SCRIPT = `
import json, sys, warnings
import numpy as np
import pydicom
from pydicom.pixel_data_handlers.util import apply_color_lut, apply_modality_lut, convert_color_space
warnings.simplefilter("ignore")
ds = pydicom.dcmread(sys.argv[1])
window = (float(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) > 3 else None
frames = int(getattr(ds, "NumberOfFrames", 1) or 1)
pi = ds.PhotometricInterpretation
a = ds.pixel_array
out = []
if pi == "PALETTE COLOR":
    out = [(apply_color_lut(a, ds) >> 8).reshape(-1).tolist()]
elif ds.SamplesPerPixel == 3:
    if pi.startswith("YBR"):
        a = convert_color_space(a, "YBR_FULL", "RGB")
    if ds.BitsAllocated > 8:
        # Shown as 8-bit samples: the top 8 of the stored bits.
        a = a >> (ds.BitsStored - 8)
    out = [a.reshape(-1).tolist()]
else:
    stored = a.reshape((frames, ds.Rows, ds.Columns)).astype("int64")
    # Only BitsStored bits hold the value, two's complement when signed (pydicom 2 keeps the others).
    if ds.PixelRepresentation == 1 and ds.BitsStored < ds.BitsAllocated:
        sign = 1 << (ds.BitsStored - 1)
        stored = ((stored & ((1 << ds.BitsStored) - 1)) ^ sign) - sign
    a = stored.astype("float64")
    shared = ds.SharedFunctionalGroupsSequence[0] if "SharedFunctionalGroupsSequence" in ds else None
    per = ds.PerFrameFunctionalGroupsSequence if "PerFrameFunctionalGroupsSequence" in ds else None
    def macro(k, name):
        if per is not None and name in per[k]: return per[k][name][0]
        if shared is not None and name in shared: return shared[name][0]
        return None
    for k in range(frames):
        pvt = macro(k, "PixelValueTransformationSequence")
        voi = macro(k, "FrameVOILUTSequence")
        if pvt is not None:
            v = a[k] * float(pvt.RescaleSlope) + float(pvt.RescaleIntercept)
        else:
            v = apply_modality_lut(stored[k], ds).astype("float64")
        c, w = window if window else ((float(voi.WindowCenter), float(voi.WindowWidth)) if voi is not None else (None, None))
        if c is None:
            lo, hi = v.min(), v.max()
            g = (v - lo) / (hi - lo) * 255 if hi > lo else v * 0
        else:
            g = np.clip(((v - (c - 0.5)) / (w - 1) + 0.5) * 255, 0, 255)
        out.append(g.reshape(-1).tolist())
print(json.dumps(out))
`;

/**
 * The pixels a standard reading gives, independently of our renderer, by pydicom and numpy:
 * greyscale frames through each frame's Pixel Value Transformation (enhanced objects'
 * functional groups, per frame over shared) or the Modality LUT, then its Frame VOI LUT
 * window (or `window`, or the frame's value range); palette colour through its (segmented)
 * lookup tables; YBR as RGB. One array per frame (greyscale) or one RGB array.
 */
export async function standardReading(dir: string, file: Buffer, name: string, window?: { center: number; width: number }): Promise<number[][]> {
  const at = path.join(dir, `${name}-standard.dcm`);
  await writeFile(at, file);
  const { stdout } = await run(PYTHON, ["-c", STANDARD_SCRIPT, at, ...(window ? [String(window.center), String(window.width)] : [])], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as number[][];
}

/** Per channel of two interleaved RGB series: Pearson's r and the mean absolute difference. */
export function perChannel(ours: ArrayLike<number>, theirs: ArrayLike<number>): Array<{ r: number; meanDiff: number }> {
  return [0, 1, 2].map((c) => {
    const a: number[] = [];
    const b: number[] = [];
    for (let i = c; i < ours.length; i += 3) {
      a.push(ours[i]!);
      b.push(theirs[i]!);
    }
    return { r: correlation(a, b), meanDiff: a.reduce((s, x, i) => s + Math.abs(x - b[i]!), 0) / a.length };
  });
}

/** DCMTK's rendering of `file` (dcmj2pnm, the object's first window), as 8-bit grey values. */
export async function dcmtkGrey(dir: string, file: Buffer, name: string): Promise<Buffer> {
  const src = path.join(dir, `${name}-dcmtk.dcm`);
  const out = path.join(dir, `${name}.pgm`);
  await writeFile(src, file);
  await run("dcmj2pnm", ["--use-window", "1", "--write-raw-pnm", src, out]);
  const pgm = await readFile(out);
  // P5\n<w> <h>\n255\n then the pixels.
  let at = 0;
  for (let fields = 0; fields < 4; at++) if (pgm[at] === 0x0a || pgm[at] === 0x20) fields++;
  return pgm.subarray(at);
}
