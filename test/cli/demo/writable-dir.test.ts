import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";

/** What the filesystem answers for the directory under test: EACCES/EROFS as a volume owned by another user, or a read-only root, answers. */
const refusal = vi.hoisted(() => ({ code: null as string | null }));
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  return {
    ...real,
    writeFile: async (...args: Parameters<typeof real.writeFile>) => {
      if (refusal.code) throw Object.assign(new Error(`${refusal.code}: refused, open '${String(args[0])}'`), { code: refusal.code });
      return real.writeFile(...args);
    },
  };
});
const { ensureWritableDir } = await import("../../../src/cli/demo/writable-dir.js");

const root = mkdtempSync(join(tmpdir(), "medmmv-writable-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the demo's output directory", () => {
  it("is made if missing and proven writable", async () => {
    refusal.code = null;
    expect(await ensureWritableDir(join(root, "out", "nested"), "the demo's results")).toBe(join(root, "out", "nested"));
  });

  for (const code of ["EACCES", "EROFS"]) {
    it(`${code}: a message naming the directory, the user and what to do, not a raw ${code}`, async () => {
      refusal.code = code;
      const err = (await ensureWritableDir(join(root, "data"), "the demo's results").then(
        () => new Error("no error"),
        (e: unknown) => e,
      )) as Error & { code: string };
      expect(err.code).toBe("CONFIG_INVALID");
      expect(err.message).toContain(join(root, "data"));
      expect(err.message).toMatch(code === "EACCES" ? /permission denied for uid \d+/ : /read-only filesystem/);
      expect(err.message).toMatch(/-v medmmv-data:\/data/);
      expect(err.message).not.toContain(`${code}:`);
    });
  }
});
