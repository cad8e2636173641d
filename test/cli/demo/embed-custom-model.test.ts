/**
 * examples/embed-custom-model.ts is run by .ci/run as an end-to-end check, so its exit code
 * must say whether the case it ran completed.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

function example(env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MY_")));
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", "examples/embed-custom-model.ts"], { cwd: ROOT, env: { ...clean, ...env }, timeout: 90_000 }, (err, stdout) => {
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
    // Port 9 (discard) on loopback: nothing listens there, so every model call fails.
    const r = await example({ MY_BASE_URL: "http://127.0.0.1:9/v1" });
    expect(r.stdout).toMatch(/^status: failed;/m);
    expect(r.code).toBe(1);
  }, 100_000);
});
