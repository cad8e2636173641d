import type { LoadedImage } from "../../contracts/clinical-case.js";
import type { ParsedDicom, SlideHeader } from "./dicom-worker.js";
import type { QidoItem } from "./dicomweb.js";
import type { PictureBudget } from "./picture-budget.js";
import { rgbaToRgb } from "./tile-object.js";
import { pyramidPictures, type TileSource } from "./whole-slide.js";

/** Bytes of RGBA tiles asked of the decoding thread at once. */
const TILE_BATCH_BYTES = 32 * 1024 * 1024;

export interface SlideInstanceLimits {
  maxPixels: number;
  maxDecodedBytes: number;
  modelLongSide?: number;
  cellRegions?: boolean;
  pictures?: PictureBudget;
  signal?: AbortSignal;
}

/**
 * A whole-slide instance sent alone (one pyramid level, every tile in the file): read as a
 * slide by the same pyramid reader, its tiles decoded by the decode pool's thread that holds
 * the object (every codec the renderer has), a batch at a time.
 */
export async function slideFromInstance(imageId: string, dicom: ParsedDicom, caption: string | undefined, limits: SlideInstanceLimits): Promise<LoadedImage[]> {
  const { elements, slide, transferSyntaxUid } = dicom.header;
  const meta = asDicomJson(elements, slide);
  const uid = typeof elements.SOPInstanceUID === "string" ? elements.SOPInstanceUID : "(none)";
  const ids = { ...(typeof elements.StudyInstanceUID === "string" ? { study: elements.StudyInstanceUID } : {}), ...(typeof elements.SeriesInstanceUID === "string" ? { series: elements.SeriesInstanceUID } : {}) };
  const source: TileSource = async (level, tiles, sink) => {
    const batch = Math.max(1, Math.floor(TILE_BATCH_BYTES / (level.tileWidth * level.tileHeight * 4)));
    for (let k = 0; k < tiles.length; k += batch) {
      const chunk = tiles.slice(k, k + batch);
      sink.reserve(chunk.length);
      const frames = await dicom.render(chunk.map((t) => ({ frame: t.frame - 1, window: null })), true);
      for (const [j, f] of frames.entries()) sink.put(k + j, rgbaToRgb(Buffer.from(f.pixels), f.width * f.height));
    }
    return { transferSyntaxUid };
  };
  const pictures = await pyramidPictures(imageId, [{ uid, meta }], ids, source, caption, {
    longSide: limits.modelLongSide ?? 1536,
    maxPixels: limits.maxPixels,
    maxDecodedBytes: limits.maxDecodedBytes,
    regions: limits.cellRegions ?? false,
    ...(limits.pictures ? { pictures: limits.pictures } : {}),
    ...(limits.signal ? { signal: limits.signal } : {}),
  });
  // The thread lets go of the object now (a refusal leaves it, like any refused object, until the thread's next object or idle end).
  await dicom.render([]);
  return pictures;
}

/** The parsed header in the DICOM JSON form the pyramid reader takes from a PACS's metadata. */
function asDicomJson(e: Record<string, unknown>, slide: SlideHeader | undefined): QidoItem {
  const one = (x: unknown) => (x === undefined ? undefined : { Value: Array.isArray(x) ? x : [x] });
  return {
    "00080008": one(e.ImageType),
    "00480006": one(e.TotalPixelMatrixColumns),
    "00480007": one(e.TotalPixelMatrixRows),
    "00280011": one(e.Columns),
    "00280010": one(e.Rows),
    "00280008": one(e.NumberOfFrames),
    "00280002": one(e.SamplesPerPixel),
    "00280100": one(e.BitsAllocated),
    "00209311": one(e.DimensionOrganizationType),
    ...(slide?.pixelSpacing ? { "52009229": { Value: [{ "00289110": { Value: [{ "00280030": { Value: slide.pixelSpacing } }] } }] } } : {}),
    ...(slide?.positions ? { "52009230": { Value: slide.positions.map(([c, r]) => ({ "0048021A": { Value: [{ "0048021E": { Value: [c] }, "0048021F": { Value: [r] } }] } })) } } : {}),
    "00480105": {
      Value: (slide?.opticalPaths ?? []).map((p) => ({
        ...(p.iccProfile ? { "00282000": { vr: "OB" } } : {}),
        "00480106": one(p.id),
        "00480107": one(p.description),
        ...(p.illumination ? { "00220016": { Value: [{ "00080104": { Value: [p.illumination] } }] } } : {}),
      })),
    },
  };
}
