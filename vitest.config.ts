import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/**/*.int.test.ts", "node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: keep file parallelism modest so timing-sensitive fault tests stay stable.
    maxWorkers: 2,
    // Files of one worker share its module graph: importing the pipeline, LangChain and the
    // server took longer than the tests of most files (under isolation each file imported them
    // afresh). Safe because no test mocks a module or leaves state behind (no vi.mock, no fake
    // timers, no process.env writes outside a test's own restore; servers, stores and temp dirs
    // are per file and closed in afterAll). docs/testing.md has the figures.
    isolate: false,
    // ... except the process-wide lessons a model server taught, which each file starts without.
    setupFiles: ["test/support/per-file-state.ts"],
    // The CLI's bundle, which the CLI and server children start from, is built once before the
    // test processes start; the example's bundles are removed once their processes end.
    globalSetup: ["test/support/build-cli.ts", "test/support/sweep-bundles.ts"],
  },
});
