import { createHash } from "node:crypto";
import type { DicomProvenance, LoadedImage } from "../../contracts/clinical-case.js";

/** A rendered DICOM picture (PNG) as an image of the case, with its provenance and caption parts. */
export function dicomPicture(id: string, png: Buffer, width: number, height: number, describe: ReadonlyArray<string | undefined>, dicom: DicomProvenance): LoadedImage {
  return {
    id,
    mimeType: "image/png",
    data: png.toString("base64"),
    sha256: createHash("sha256").update(png).digest("hex"),
    width,
    height,
    caption: describe.filter(Boolean).join("; ").slice(0, 2000),
    dicom,
  };
}
