import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error plain JavaScript without types (it runs before anything could load TypeScript)
import { bundledPackages, packagesStamp, sourceStamp } from "../../bin/cli-bundle.mjs";

/**
 * The CLI's bundle is rebuilt when what it holds changes: the sources, the lockfile, and the
 * installed packages themselves, so a dependency swapped or patched in node_modules without a
 * lockfile change is not served from the old bundle.
 */
const root = mkdtempSync(join(tmpdir(), "medmmv-bundle-stamp-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const write = (rel: string, text: string, mtimeS = 1_700_000_000) => {
  const file = join(root, rel);
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, text);
  utimesSync(file, mtimeS, mtimeS);
};

describe("the CLI bundle's stamp", () => {
  write("src/cli/main.ts", "export {};\n");
  write("package.json", "{}");
  write("package-lock.json", "{}");
  write("node_modules/.package-lock.json", '{"packages":{"node_modules/zod":{"version":"4.0.0"}}}');
  write("node_modules/zod/package.json", '{"name":"zod","version":"4.0.0"}');
  write("node_modules/@scope/pkg/package.json", '{"name":"@scope/pkg","version":"1.0.0"}');
  write("node_modules/a/node_modules/b/package.json", '{"name":"b","version":"2.0.0"}');

  it("names the packages a build holds, scoped and nested ones too", () => {
    expect(bundledPackages(["src/cli/main.ts", "node_modules/zod/v4/index.js", "node_modules/zod/v4/core.js", "node_modules/@scope/pkg/dist/x.js", "node_modules/a/node_modules/b/lib/y.js"])).toEqual([
      "node_modules/@scope/pkg",
      "node_modules/a/node_modules/b",
      "node_modules/zod",
    ]);
  });

  it("changes when an installed package's version changes with the lockfile untouched", () => {
    const packages = ["node_modules/@scope/pkg", "node_modules/a/node_modules/b", "node_modules/zod"];
    const before = packagesStamp(packages, root);
    expect(packagesStamp(packages, root)).toBe(before);
    // Same size, same mtime: only the content tells.
    write("node_modules/zod/package.json", '{"name":"zod","version":"4.0.1"}');
    expect(packagesStamp(packages, root)).not.toBe(before);
  });

  it("changes when npm rewrites its record of what is installed (an install with --no-save)", () => {
    const before = sourceStamp(root);
    write("node_modules/.package-lock.json", '{"packages":{"node_modules/zod":{"version":"4.0.1"}}}', 1_700_000_100);
    expect(sourceStamp(root)).not.toBe(before);
  });
});
