import type { LoadedImage, PreparedCase } from "../contracts/clinical-case.js";
import { MedmmvError } from "../contracts/errors.js";
import { modelRendition } from "./image-decoder.js";

export interface ImageVaultOptions {
  /** Long side (px) of what the agents send the model; 0 sends the originals. */
  modelLongSide: number;
  /** The pixel limit every image was admitted under (bounds the resampling decode). */
  maxPixels: number;
}

/** An image as the workflow state carries it: everything but the bytes. */
export type ImageRef = Omit<LoadedImage, "data">;
/** A case as the workflow state carries it (and its checkpoints store it). */
export type CaseInState = Omit<PreparedCase, "images"> & { images: ImageRef[] };

/**
 * Image bytes of the cases in flight, by content hash, outside the workflow state. The
 * state holds references only: every Send payload and every checkpoint would otherwise
 * carry a copy of each image (k rollouts + m refinements per case), which costs CPU to
 * serialise and storage to keep. A resumed case puts its images back (from the store)
 * before the workflow continues.
 *
 * What it holds is the model's copy: resized (keeping aspect) to the configured long side,
 * keyed by the original's hash, so the store, the provenance and the audit view keep the
 * original while no agent sends more pixels than the model reads.
 */
export class ImageVault {
  private readonly images = new Map<string, { image: LoadedImage; holders: Set<string> }>();

  constructor(private readonly options: ImageVaultOptions = { modelLongSide: 0, maxPixels: Number.MAX_SAFE_INTEGER }) {}

  /** Keep this case's images until `release(caseId)`; returns the case as the state holds it. */
  async hold(c: PreparedCase): Promise<CaseInState> {
    const refs: ImageRef[] = [];
    for (const img of c.images) {
      if (!this.images.has(img.sha256)) {
        const image = await modelRendition(img, this.options.modelLongSide, this.options.maxPixels);
        // Another case may have held the same picture while this one was resampled.
        if (!this.images.has(img.sha256)) this.images.set(img.sha256, { image, holders: new Set<string>() });
      }
      const entry = this.images.get(img.sha256)!;
      entry.holders.add(c.id);
      // The state names the picture the agents will see (its size), under the original's hash.
      const { data: _bytes, ...ref } = img;
      const seen = entry.image;
      refs.push({ ...ref, mimeType: seen.mimeType, ...(seen.width !== undefined && seen.height !== undefined ? { width: seen.width, height: seen.height } : {}) });
    }
    return { ...c, images: refs };
  }

  release(caseId: string): void {
    for (const [sha, entry] of this.images) {
      entry.holders.delete(caseId);
      if (entry.holders.size === 0) this.images.delete(sha);
    }
  }

  /** The case with its image bytes, for the agents. */
  hydrate(c: CaseInState): PreparedCase {
    return {
      ...c,
      images: c.images.map((ref) => {
        const entry = this.images.get(ref.sha256);
        if (!entry) throw new MedmmvError("INTERNAL", `image ${ref.id} of case ${c.id} is not loaded (resume without its images?)`);
        return { ...ref, mimeType: entry.image.mimeType, data: entry.image.data };
      }),
    };
  }

  get size(): number {
    return this.images.size;
  }
}
