import { z } from "zod";
import { CasePathwayRef } from "./case-pathway-ref.js";

const DicomUid = z.string().min(1).max(64).regex(/^[0-9]+(\.[0-9]+)*$/, "a DICOM UID is digits and dots");

/** docs/imaging.md#dicomweb: a study (or one series of it) on an allow-listed DICOMweb server. */
export const DicomwebRef = z
  .object({
    server: z.string().url().max(2000).describe("DICOMweb base URL (WADO-RS/QIDO-RS root); must be in MEDMMV_DICOMWEB_SERVERS"),
    study: DicomUid.describe("StudyInstanceUID"),
    series: DicomUid.optional().describe("SeriesInstanceUID; default: chosen by the documented rule"),
    accessToken: z.string().min(1).max(8192).optional().describe("Bearer token for the server; used for this fetch only, never stored or logged"),
  })
  .strict();
export type DicomwebRef = z.infer<typeof DicomwebRef>;

/** docs/architecture.md#data-contracts: the input contract. Only `question` is required. */
export const ImageInput = z
  .object({
    id: z.string().min(1).max(128).describe("Image id, unique within the case"),
    mimeType: z.string().max(64).optional().describe("Declared MIME type; the real one is read from the bytes"),
    data: z.string().optional().describe("Base64-encoded image bytes"),
    path: z.string().max(4096).optional().describe("File path (CLI case files only)"),
    caption: z.string().max(2000).optional().describe("Caption or figure label"),
    dicomweb: DicomwebRef.optional().describe("Fetch the pictures from a DICOMweb server instead of sending bytes"),
  })
  .strict()
  .refine((i) => i.data !== undefined || i.path !== undefined || i.dicomweb !== undefined, {
    message: "each image needs `data` (base64), `path` or `dicomweb`",
  });
export type ImageInput = z.infer<typeof ImageInput>;

/** Nesting allowed in free-form fields: far more than any real metadata, far less than a stack. */
export const MAX_FREE_JSON_DEPTH = 32;

/** Depth of a JSON value, measured without recursion (a hostile body can nest 100k levels). */
function exceedsDepth(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * Free-form values (metadata, extra patient fields) are stored, hashed and rendered
 * recursively downstream; bounded here so deep nesting is a 400, not a stack overflow.
 */
const FreeJson = z.unknown().refine((v) => !exceedsDepth(v, MAX_FREE_JSON_DEPTH), {
  message: `nested deeper than ${MAX_FREE_JSON_DEPTH} levels; flatten it`,
});

export const OptionLetter = z.string().regex(/^[A-Z]$/, "option keys are single capital letters A–Z");

/** The oldest age a case may give; a FHIR birthDate further back is refused at its element. */
export const MAX_PATIENT_AGE = 150;

export const ClinicalCase = z
  .object({
    id: z.string().min(1).max(200).regex(/^[A-Za-z0-9._:-]+$/, "id may use letters, digits and . _ : -").optional(),
    question: z.string().trim().min(1, "question must not be empty").max(20_000),
    notes: z.string().max(200_000).optional(),
    options: z.record(OptionLetter, z.string().min(1).max(5_000)).optional(),
    images: z.array(ImageInput).max(16).optional(),
    patient: z
      .object({
        age: z.number().min(0).max(MAX_PATIENT_AGE).optional(),
        sex: z.string().max(32).optional(),
      })
      .catchall(FreeJson)
      .optional(),
    metadata: z.record(z.string(), FreeJson).optional(),
    pathway: CasePathwayRef.optional(),
  })
  .strict();
export type ClinicalCase = z.infer<typeof ClinicalCase>;

/**
 * Where a rendering of a DICOM object came from: shown in the audit view beside the picture,
 * never put in a prompt (UIDs identify a study as surely as a name).
 */
export interface DicomProvenance {
  sopInstanceUid: string;
  seriesInstanceUid?: string;
  studyInstanceUid?: string;
  modality?: string;
  transferSyntaxUid: string;
  /** 1-based frame number rendered, of `frames`. */
  frame: number;
  frames: number;
  /** The VOI window applied (after the modality LUT), and which rule chose it; absent for colour. */
  window?: { center: number; width: number; source: string };
  /** What the reader forgave in the object (e.g. implicit VR under an explicit-VR transfer syntax). */
  warnings?: string[];
  /** Present when the picture was assembled from a whole-slide image's pyramid (docs/imaging.md#whole-slide-images). */
  wsi?: WsiProvenance;
}

/** A rectangle in pixels: x, y of its top-left corner, then its size. */
export interface PixelRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Where a whole-slide picture comes from: its level, that level's spacing, and the region of it. */
export interface WsiProvenance {
  role: "overview" | "region";
  /** 0 = full resolution; `levels` in the pyramid. */
  level: number;
  levels: number;
  /** The level's total pixel matrix. */
  totalColumns: number;
  totalRows: number;
  /** PixelSpacing of the level (row, column), mm. */
  pixelSpacingMm?: [number, number];
  /** The region in the level's total pixel matrix. */
  region: PixelRect;
  /** The same region in the overview picture's coordinates (the whole overview for the overview). */
  overviewRegion: PixelRect;
  /** The overview picture's id and size, so a viewer can draw the region on it. */
  overviewId: string;
  overviewWidth: number;
  overviewHeight: number;
  /** Tiles (frames) fetched for this picture, of the level's frames. */
  tiles: number;
  levelFrames: number;
  /** Why this region was chosen (regions only). */
  selection?: string;
  /** ICC profile: whether the series carries one, and what was done with it. */
  iccProfile: string;
  opticalPaths: Array<{ id?: string; description?: string; illumination?: string }>;
}

/** An image after loading: bytes checked, MIME from magic bytes. */
export interface LoadedImage {
  id: string;
  mimeType: "image/jpeg" | "image/png" | "image/gif" | "image/webp";
  data: string; // base64
  caption?: string;
  sha256: string;
  width?: number;
  height?: number;
  /** Present when this picture is a rendered frame of a DICOM object. */
  dicom?: DicomProvenance;
}

/** A case ready for the pipeline: images resolved to bytes. */
export type PreparedCase = Omit<ClinicalCase, "images" | "id"> & { id: string; images: LoadedImage[] };
