import { randomUUID } from "node:crypto";
import { MedmmvError } from "../contracts/errors.js";
import type { ClinicalCase, PreparedCase } from "../contracts/clinical-case.js";
import { loadPathway } from "../pathways/load-pathway.js";
import { prepareImage, type PrepareImageOptions } from "./images.js";

/**
 * Whole-case intake, shared by every way a case arrives (JSON body, multipart upload, case
 * file, FHIR Bundle, benchmark item): the case gets its id, its images are decoded and
 * checked, and its pathway is resolved, before anything is stored or any model is called.
 */
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
  const loaded = await Promise.all(images.map((img) => prepareImage(img, opts)));
  // Checked here, so an unknown pathway id is a 400 before any model call; an id stays an
  // id (the stored case and every checkpoint carry the name, not a copy of the file).
  if (rest.pathway !== undefined) loadPathway(rest.pathway);
  return { ...rest, id: id ?? `case-${randomUUID()}`, images: loaded };
}
