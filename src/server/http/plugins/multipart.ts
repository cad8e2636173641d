import multipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import type { Config } from "../../../core/config.js";

/** At most this many image files per case (the ClinicalCase schema allows 16 images). */
export const MAX_UPLOAD_FILES = 16;

/**
 * multipart/form-data for POST /diagnose: a `case` JSON field plus image files. Oversized
 * files throw (413) instead of being truncated silently (docs/architecture.md#known-pitfalls).
 */
export async function registerMultipart(app: FastifyInstance, http: Config["http"]): Promise<void> {
  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: {
      fileSize: http.maxImageBytes,
      files: MAX_UPLOAD_FILES,
      fields: 4,
      fieldSize: http.maxBodyBytes,
      parts: MAX_UPLOAD_FILES + 4,
      headerPairs: 100,
    },
  });
}
