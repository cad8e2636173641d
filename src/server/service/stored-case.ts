/** A case as the store keeps it: images by content hash, the Idempotency-Key request hash, and the way back to pipeline input. */
import { createHash } from "node:crypto";
import type { LoadedImage, PreparedCase } from "../../core/contracts/clinical-case.js";
import { canonicalJson } from "../../core/contracts/canonical-json.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import type { CaseRecord, CaseRecords, StoredCaseInput } from "../store/case-store.js";

/** The case as stored: images become references to the content-addressed image table. */
export function toStoredInput(c: PreparedCase): StoredCaseInput {
  return {
    ...c,
    images: c.images.map((i) => ({ id: i.id, sha256: i.sha256, mimeType: i.mimeType, ...(i.caption !== undefined ? { caption: i.caption } : {}), ...(i.dicom ? { dicom: i.dicom } : {}) })),
  };
}

/**
 * What "the same request" means for Idempotency-Key: the validated case (images by
 * content hash, so JSON and multipart uploads of the same bytes agree; the server-chosen
 * id left out) and the pipeline overrides.
 */
export function requestHash(input: StoredCaseInput, overrides: Record<string, unknown>): string {
  const { id: _serverId, ...rest } = input;
  return createHash("sha256").update(canonicalJson({ case: rest, overrides })).digest("hex");
}

/** A stored case back into pipeline input, its images re-read from the store by hash. */
export async function rebuildPreparedCase(record: CaseRecord, store: Pick<CaseRecords, "getImage">): Promise<PreparedCase> {
  const images: LoadedImage[] = [];
  for (const ref of record.input.images) {
    const img = await store.getImage(ref.sha256);
    if (!img) throw new MedmmvError("STORE_FAILED", `image ${ref.id} of case ${record.id} is missing from the store`);
    images.push({
      id: ref.id,
      mimeType: ref.mimeType,
      data: img.data,
      sha256: ref.sha256,
      ...(ref.caption !== undefined ? { caption: ref.caption } : {}),
      ...(img.width !== undefined ? { width: img.width } : {}),
      ...(img.height !== undefined ? { height: img.height } : {}),
      ...(ref.dicom ? { dicom: ref.dicom } : {}),
    });
  }
  return { ...record.input, images };
}
