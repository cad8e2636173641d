#!/usr/bin/env node
// A clone works without a build step: the CLI runs from a bundle of its TypeScript sources,
// built on first use and rebuilt when they change (cli-bundle.mjs), or, while that cannot be
// had (another process is building it, a read-only install), from the sources through tsx.
import { cliBundle } from "./cli-bundle.mjs";

const bundle = await cliBundle();
if (bundle) {
  await import(bundle);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
