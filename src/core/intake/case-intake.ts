import { randomUUID } from "node:crypto";
import { MedmmvError } from "../contracts/errors.js";
import type { ClinicalCase, PreparedCase } from "../contracts/clinical-case.js";
import { loadPathway } from "../pathways/load-pathway.js";
import { fhirOrigin } from "../contracts/fhir-origin.js";
import { fhirError, type FhirIssueType, type RefusalCode } from "./fhir/fhir-error.js";
import { prepareImages, type PrepareImageOptions } from "./images.js";
import { ctWindowsAskedFor } from "./dicom/windows.js";
import { shareActivityScaleBySeries } from "./dicom/pet-scale.js";
import { asksAboutCells } from "./dicom/wsi-regions.js";

/**
 * Whole-case intake, shared by every way a case arrives (JSON body, multipart upload, case
 * file, FHIR Bundle, benchmark item): the case gets its id, its images are decoded and
 * checked, and its pathway is resolved, before anything is stored or any model is called.
 */
/** Pictures one case may carry, the same cap as its `images` array. */
const MAX_PICTURES = 16;

/** Give the case an id, load every image, and refuse duplicate image ids (claims cite them). */
export async function prepareCase(c: ClinicalCase, opts: PrepareImageOptions): Promise<PreparedCase> {
  const { images = [], id, ...rest } = c;
  const seen = new Set<string>();
  for (const img of images) {
    if (seen.has(img.id)) {
      throw new MedmmvError(
        "INVALID_INPUT",
        `image id "${img.id}" appears more than once; give each image in the case a unique id`,
      );
    }
    seen.add(img.id);
  }
  const imagePaths = fhirOrigin(rest)?.imagePaths ?? {};
  // A CT is rendered at soft tissue, plus lung and bone windows when the question needs them.
  // Every picture is reserved from this budget before it is decoded, so a case of many DICOM
  // objects, frames or instances is refused before it decodes more than it may send.
  // Checked before any image, so an unknown pathway id is a 400 before any fetch or model
  // call; an id stays an id (the stored case and every checkpoint carry the name, not a copy).
  const pathway = rest.pathway !== undefined ? loadPathway(rest.pathway) : undefined;
  // A whole slide sends finer regions besides its overview when the case (or a step of its pathway) asks about cells.
  const text = `${rest.question}\n${rest.notes ?? ""}`;
  const cellRegions = asksAboutCells([text, ...(pathway?.steps.map((st) => st.question) ?? [])].join("\n"));
  // The first image refused refuses the case: the others' fetches and decoding are aborted at
  // once (a 415 must not leave a PACS being read and tiles decoded for a case already answered).
  const refused = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, refused.signal]) : refused.signal;
  opts = { ...opts, extraCtWindows: ctWindowsAskedFor(text), cellRegions, pictures: { left: MAX_PICTURES, max: MAX_PICTURES }, signal };
  const loaded = (
    await Promise.all(
      images.map((img) =>
        prepareImages(img, opts).catch((e: unknown) => {
          refused.abort(e);
          return Promise.reject(atFhirElement(e, imagePaths[img.id]));
        }),
      ),
    )
  ).flat();
  // A DICOM object becomes several pictures (its frames): the case's limits hold for those.
  if (loaded.length > MAX_PICTURES) {
    throw new MedmmvError("PAYLOAD_TOO_LARGE", `the case's images make ${loaded.length} pictures (DICOM frames count one each); the limit is ${MAX_PICTURES} — send fewer images or frames`, { details: { pictures: loaded.length, max: MAX_PICTURES } });
  }
  const ids = new Set<string>();
  for (const img of loaded) {
    if (ids.has(img.id)) throw new MedmmvError("INVALID_INPUT", `image id "${img.id}" appears more than once (a DICOM frame is named <id>-frame<n>); give each image a unique id`);
    ids.add(img.id);
  }
  // PET slices of one series sent as separate images share one activity scale (docs/imaging.md).
  return { ...rest, id: id ?? `case-${randomUUID()}`, images: await shareActivityScaleBySeries(loaded) };
}

const FHIR_CODE: Partial<Record<RefusalCode, FhirIssueType>> = { INVALID_INPUT: "value", PAYLOAD_TOO_LARGE: "too-costly", UNSUPPORTED_MEDIA: "not-supported" };

/** An image of a FHIR case refused by the decoder names the attachment it came from. */
function atFhirElement(e: unknown, path: string | undefined): unknown {
  if (path === undefined || !(e instanceof MedmmvError)) return e;
  const fhirCode = FHIR_CODE[e.code as RefusalCode];
  return fhirCode ? fhirError(e.code as RefusalCode, [{ path, message: e.message, fhirCode }]) : e;
}
