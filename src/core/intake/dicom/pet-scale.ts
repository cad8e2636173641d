import type { LoadedImage } from "../../contracts/clinical-case.js";
import { loadSharp } from "../image-decoder.js";
import { dicomPicture } from "./dicom-picture.js";

/** What a rendering windowed by its own value range says in its provenance. */
const OWN_RANGE = "frame value range";
export const SERIES_ACTIVITY_SCALE = "PET activity range of the series' instances sent";

/** Whether a picture is a PET slice windowed by its own range (and so may share a series' scale). */
function ownRangePet(i: LoadedImage): boolean {
  return i.dicom?.modality === "PT" && i.dicom.window?.source === OWN_RANGE;
}

/**
 * A case's pictures with the PET slices of one series (the same SeriesInstanceUID, whether read
 * through DICOMweb or each sent as its own image) brought to one activity scale; the others, and
 * their order, as they are. Every way a case arrives goes through this once (case-intake.ts).
 */
export async function shareActivityScaleBySeries(images: LoadedImage[]): Promise<LoadedImage[]> {
  const bySeries = new Map<string, number[]>();
  for (const [k, i] of images.entries()) {
    const series = i.dicom?.seriesInstanceUid;
    if (series !== undefined && ownRangePet(i)) bySeries.set(series, [...(bySeries.get(series) ?? []), k]);
  }
  const out = [...images];
  for (const ks of bySeries.values()) {
    if (ks.length < 2) continue;
    const shared = await shareSeriesActivityScale(ks.map((k) => images[k]!));
    for (const [n, k] of ks.entries()) out[k] = shared[n]!;
  }
  return out;
}

/**
 * A classic PET series (one slice an instance, each with its own RescaleSlope) rendered
 * instance by instance gets a window per slice's own range: every slice's hottest pixel comes
 * out white, a background slice as hot as the bladder. Once all the series' slices sent are
 * rendered, they are brought to one activity scale — the union of their ranges, in the rescaled
 * units (Bq/ml, SUV) — as an enhanced PET's frames are in render-dicom.ts. Each picture is
 * mapped grey value by grey value: its own linear VOI function (PS3.3 C.11.2.1.2.1) inverted to
 * the value, then the shared one applied. The shared range holds each slice's, so this only
 * narrows a slice's grey levels (within one level of rendering it under the shared window
 * directly), and it is done after the series is read, so no slice is held decoded twice.
 * Pictures that are not PET, or carry a window of their own, are returned as they are.
 */
async function shareSeriesActivityScale(images: LoadedImage[]): Promise<LoadedImage[]> {
  const own = images.map((i) => (ownRangePet(i) ? i.dicom!.window! : null));
  if (images.length < 2 || own.some((w) => w === null)) return images;
  const lo = Math.min(...own.map((w) => w!.center - w!.width / 2));
  const hi = Math.max(...own.map((w) => w!.center + w!.width / 2));
  const shared = { center: (lo + hi) / 2, width: Math.max(1, hi - lo) };
  const sharp = await loadSharp();
  const out: LoadedImage[] = [];
  for (const [k, img] of images.entries()) {
    const w = own[k]!;
    const { data, info } = await sharp(Buffer.from(img.data, "base64")).raw().toBuffer({ resolveWithObject: true });
    const table = new Uint8Array(256);
    for (let g = 0; g < 256; g++) {
      // The slice's value at grey g under its own window, then its grey under the shared one.
      const v = w.width > 1 ? (g / 255 - 0.5) * (w.width - 1) + (w.center - 0.5) : w.center;
      table[g] = Math.round(Math.min(255, Math.max(0, ((v - (shared.center - 0.5)) / (shared.width - 1) + 0.5) * 255)));
    }
    // Grey pictures are written as RGB of three equal channels, as render-dicom.ts writes them.
    const rgb = Buffer.alloc(info.width * info.height * 3);
    for (let p = 0; p < info.width * info.height; p++) rgb.fill(table[data[p * info.channels]!]!, p * 3, p * 3 + 3);
    const png = await sharp(rgb, { raw: { width: info.width, height: info.height, channels: 3 } }).png().toBuffer();
    const window = { ...shared, source: SERIES_ACTIVITY_SCALE };
    const caption = img.caption?.replace(`window C${w.center}/W${w.width} (${OWN_RANGE})`, `window C${window.center}/W${window.width} (${window.source})`);
    out.push(dicomPicture(img.id, png, info.width, info.height, [caption], { ...img.dicom!, window }));
  }
  return out;
}
