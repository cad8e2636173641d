/**
 * vitest `globalSetup`: the CLI's bundle of the sources (bin/cli-bundle.mjs) is built once,
 * before any test process starts. Every CLI and server child of the run then starts from it
 * (bundled-process.ts, medmmv-cli.ts); otherwise the first children would build it at the same
 * moment in several workers, and all but the builder would run through tsx meanwhile.
 */
import { execFile } from "node:child_process";
import { MEDMMV_BIN } from "./medmmv-cli.js";

export default async function setup(): Promise<void> {
  // `--version` loads nothing beyond the command table: the run builds the bundle (if the sources
  // changed since the last build) and checks that it starts.
  await new Promise<void>((resolve, reject) => {
    execFile(process.execPath, [MEDMMV_BIN, "--version"], { env: { ...process.env, NODE_OPTIONS: "" }, timeout: 120_000 }, (err, _stdout, stderr) =>
      err ? reject(new Error(`building the CLI's bundle failed: ${err.message}\n${stderr}`)) : resolve(),
    );
  });
}
