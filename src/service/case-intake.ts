import { createHash } from "node:crypto";
import type { LoadedImage, PreparedCase } from "../case/schema.js";
import { MedmmvError } from "../errors.js";
import type { CaseRecord, CaseStore, StoredCaseInput } from "../store/case-store.js";

/** The case as stored: images become references to the content-addressed image table. */
export function toStoredInput(c: PreparedCase): StoredCaseInput {
  return {
    ...c,
    images: c.images.map((i) => ({ id: i.id, sha256: i.sha256, mimeType: i.mimeType, ...(i.caption !== undefined ? { caption: i.caption } : {}) })),
  };
}

/** JSON with object keys sorted at every depth, so equal values hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return v;
  });
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
export async function rebuildPreparedCase(record: CaseRecord, store: CaseStore): Promise<PreparedCase> {
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
    });
  }
  return { ...record.input, images };
}
