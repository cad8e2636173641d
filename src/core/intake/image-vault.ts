import type { LoadedImage, PreparedCase } from "../contracts/clinical-case.js";
import { MedmmvError } from "../contracts/errors.js";

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
 */
export class ImageVault {
  private readonly images = new Map<string, { image: LoadedImage; holders: Set<string> }>();

  /** Keep this case's images until `release(caseId)`; returns the case as the state holds it. */
  hold(c: PreparedCase): CaseInState {
    for (const img of c.images) {
      const entry = this.images.get(img.sha256) ?? { image: img, holders: new Set<string>() };
      entry.holders.add(c.id);
      this.images.set(img.sha256, entry);
    }
    return { ...c, images: c.images.map(({ data: _bytes, ...ref }) => ref) };
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
        return { ...ref, data: entry.image.data };
      }),
    };
  }

  get size(): number {
    return this.images.size;
  }
}
