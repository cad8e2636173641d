/**
 * examples/embed-custom-model.ts is run by .ci/run as an end-to-end check, so its exit code
 * must say whether the case it ran completed.
 */
import { execFile } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ROOT, sharedBundle } from "../../support/bundled-process.js";

/**
 * The example as a program: the same file .ci/run runs through tsx, bundled once per test
 * process (a tsx start transpiles everything again: 5–6 s of CPU per run on two cores).
 */
async function example(env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  const { file } = await sharedBundle("embed-example");
  // The runner's own MY_* and MEDMMV_* settings must not reach the example (it reads both).
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MY_") && !k.startsWith("MEDMMV_")));
  return new Promise((resolve) => {
    execFile(process.execPath, [file], { cwd: ROOT, env: { ...clean, ...env }, timeout: 90_000 }, (err, stdout) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout });
    });
  });
}

describe("examples/embed-custom-model.ts", () => {
  it("offline, against its scripted server: the case completes and it exits 0", async () => {
    const r = await example({});
    expect(r.stdout).toMatch(/^status: completed;/m);
    expect(r.code).toBe(0);
  }, 100_000);

  it("with an endpoint that refuses every connection: the case fails and it exits 1", async () => {
    // Port 9 (discard) on loopback: nothing listens there, so every model call fails. Every
    // attempt is still made (the example reads medmmv's settings from the environment), with no
    // pause between them: the test is about the exit code, not the backoff.
    const r = await example({ MY_BASE_URL: "http://127.0.0.1:9/v1", MEDMMV_LLM_BACKOFF_BASE_MS: "0" });
    expect(r.stdout).toMatch(/^status: failed;/m);
    expect(r.code).toBe(1);
  }, 100_000);
});
