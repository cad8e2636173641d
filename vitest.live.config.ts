import { defineConfig } from "vitest/config";

/** Live tests against a real endpoint: MEDMMV_LIVE=1 plus OPENAI_BASE_URL / MEDMMV_MODEL (see README). */
export default defineConfig({
  test: { include: ["test/**/*.int.test.ts"], testTimeout: 600_000, maxWorkers: 1 },
});
