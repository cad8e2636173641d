import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/**/*.int.test.ts", "node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: keep file parallelism modest so timing-sensitive fault tests stay stable.
    maxWorkers: 2,
  },
});
