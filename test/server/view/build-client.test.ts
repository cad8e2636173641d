import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { buildClientBundle, clientBundle, packageRoot, writeClientBundle } from "../../../src/server/view/build-client.js";

describe("view client bundle", () => {
  it("builds one inline-safe IIFE with sigma and graphology inside", () => {
    const b = clientBundle();
    expect(b.origin).toBe("built");
    expect(b.code.length).toBeGreaterThan(10_000);
    // Booleans, not toMatch: a failure must not print half a megabyte of bundle.
    expect(/<\/script|<!--/i.test(b.code)).toBe(false);
    // No module syntax and no loader: it must run as a classic inline script.
    expect(/^\s*(import|export)\s/m.test(b.code)).toBe(false);
    expect(/\bimport\s*\(\s*["'`]/.test(b.code)).toBe(false);
    expect(b.code.includes("__medmmvView")).toBe(true);
    expect(clientBundle()).toBe(b);
  });

  it("writes the prebuilt bundle for installs without sources", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-bundle-"));
    try {
      const file = path.join(dir, "view", "client.js");
      const out = writeClientBundle(file);
      expect(out.file).toBe(file);
      const code = await readFile(file, "utf8");
      expect(code).toBe(buildClientBundle(packageRoot()));
      expect(out.bytes).toBe(Buffer.byteLength(code));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
