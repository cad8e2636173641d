import type { LoadedImage } from "../../contracts/clinical-case.js";
import type { ParsedDicom, SlideHeader } from "./dicom-worker.js";
import type { QidoItem } from "./dicomweb.js";
import type { PictureBudget } from "./picture-budget.js";
import { decodedTile, decodedValues, pyramidPictures, storesValues, tileInFlightBytes, type TileSource } from "./whole-slide.js";
import { coordinate, type FramePositions } from "./wsi-metadata.js";

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
 * the object (every codec the renderer has), one at a time, each pasted before the next.
 */
export async function slideFromInstance(imageId: string, dicom: ParsedDicom, caption: string | undefined, limits: SlideInstanceLimits): Promise<LoadedImage[]> {
  const { elements, slide, transferSyntaxUid } = dicom.header;
  const meta = asDicomJson(elements, slide);
  const uid = typeof elements.SOPInstanceUID === "string" ? elements.SOPInstanceUID : "(none)";
  const ids = { ...(typeof elements.StudyInstanceUID === "string" ? { study: elements.StudyInstanceUID } : {}), ...(typeof elements.SeriesInstanceUID === "string" ? { series: elements.SeriesInstanceUID } : {}) };
  // One tile decoded, handed back and pasted before the next is asked for.
  const source: TileSource = async (level, tiles, sink) => {
    for (const [k, t] of tiles.entries()) {
      sink.reserve(tileInFlightBytes(level));
      if (storesValues(level)) {
        const [f] = await dicom.render([{ frame: t.frame - 1, window: null, values: true }], true);
        sink.put(k, decodedValues(imageId, level, f), 1);
        continue;
      }
      const [f] = await dicom.render([{ frame: t.frame - 1, window: null }], true);
      sink.put(k, decodedTile(imageId, level, f), 4);
    }
    return { transferSyntaxUid };
  };
  const positions = slide?.positions ? framePositions(slide.positions) : undefined;
  const pictures = await pyramidPictures(imageId, [{ uid, meta, ...(positions ? { positions } : {}) }], ids, source, caption, {
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

/** Each frame's position (column, row) in the pairs the pyramid reader takes. */
function framePositions(positions: Array<[number, number]>): FramePositions {
  const out = new Int32Array(positions.length * 2);
  positions.forEach(([c, r], k) => {
    out[k * 2] = coordinate(c);
    out[k * 2 + 1] = coordinate(r);
  });
  return out;
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
    "00280004": one(e.PhotometricInterpretation),
    "00281050": one(e.WindowCenter),
    "00281051": one(e.WindowWidth),
    "00209311": one(e.DimensionOrganizationType),
    ...(slide?.pixelSpacing ? { "52009229": { Value: [{ "00289110": { Value: [{ "00280030": { Value: slide.pixelSpacing } }] } }] } } : {}),
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
