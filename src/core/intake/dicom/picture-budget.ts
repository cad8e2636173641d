import { MedmmvError } from "../../contracts/errors.js";

/** Pictures a case may still take; each object reserves its renderings before it decodes them. */
export interface PictureBudget {
  left: number;
  readonly max: number;
}

/** Reserve `n` pictures of the case's budget, or refuse (413) before anything is decoded. */
export function reservePictures(budget: PictureBudget | undefined, n: number, imageId: string): void {
  if (!budget) return;
  if (n > budget.left) {
    throw new MedmmvError("PAYLOAD_TOO_LARGE", `image "${imageId}": its ${n} picture(s) would take the case past ${budget.max} pictures (DICOM frames and instances count one each); send fewer images or frames`, { details: { imageId, pictures: n, left: budget.left, max: budget.max } });
  }
  budget.left -= n;
}
