import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { BuildOptions } from "esbuild";
import { MedmmvError } from "../../core/contracts/errors.js";

/**
 * The audit view's browser code: TypeScript under src/server/view/client, bundled by esbuild into one
 * IIFE that the page inlines (nothing is fetched at run time, no CDN).
 *
 * How the page gets it: built in memory on first use and cached for the life of the process
 * (esbuild takes a fraction of a second), so tests, the CLI and `serve` from a checkout always
 * run the bundle that matches the sources — no stale file to forget, and no file written from
 * a request path. `dist/view/client.js` (written by `tsx src/server/view/build-client.ts`) is the
 * fallback for installs without the TypeScript sources or without esbuild (esbuild is a
 * runtime dependency, so `npm ci --omit=dev`, as in the Dockerfile, keeps it and builds in memory).
 */
export const CLIENT_ENTRY = "src/server/view/client/main.ts";
export const CLIENT_OUTFILE = "dist/view/client.js";

export interface ClientBundle {
  code: string;
  /** base64 sha256 of `code`, for a CSP `'sha256-…'` source. */
  sha256: string;
  origin: "built" | "prebuilt";
}

type Esbuild = typeof import("esbuild");

/** The folder holding medmmv's package.json (this file lives in src/server/view or dist/src/view). */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, "package.json");
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "medmmv") return dir;
      } catch {
        // An unreadable package.json is not ours; keep walking up.
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new MedmmvError("INTERNAL", "cannot locate the medmmv package root");
    dir = parent;
  }
}

function loadEsbuild(): Esbuild | null {
  try {
    // Synchronous on purpose: renderCaseViewHtml is synchronous. esbuild is a runtime
    // dependency, but an install may still lack it (e.g. one made without its platform binary).
    return createRequire(import.meta.url)("esbuild") as Esbuild;
  } catch {
    return null;
  }
}

function buildOptions(root: string): BuildOptions {
  return {
    absWorkingDir: root,
    entryPoints: [path.join(root, CLIENT_ENTRY)],
    bundle: true,
    format: "iife",
    platform: "browser",
    target: ["chrome110", "firefox115", "safari16"],
    minify: true,
    legalComments: "none",
    // ASCII output: the bundle is inlined in HTML, so no encoding surprises.
    charset: "ascii",
    sourcemap: false,
    logLevel: "silent",
    define: { "process.env.NODE_ENV": '"production"' },
  };
}

/** The bundle must be safe to place between <script> tags verbatim. */
function checkInlineSafe(code: string): string {
  if (/<\/script/i.test(code) || /<!--/.test(code)) {
    throw new MedmmvError("INTERNAL", "view client bundle contains a sequence that would end an inline script");
  }
  return code;
}

function sha256(code: string): string {
  return createHash("sha256").update(code, "utf8").digest("base64");
}

/** Bundles the client in memory. Throws INTERNAL when esbuild or the sources are missing or the build fails. */
export function buildClientBundle(root = packageRoot()): string {
  const esbuild = loadEsbuild();
  if (!esbuild) throw new MedmmvError("INTERNAL", "esbuild is not installed; cannot build the view client");
  if (!existsSync(path.join(root, CLIENT_ENTRY))) {
    throw new MedmmvError("INTERNAL", `view client sources not found at ${CLIENT_ENTRY}`);
  }
  try {
    const out = esbuild.buildSync({ ...buildOptions(root), write: false });
    const file = out.outputFiles?.[0];
    if (!file) throw new Error("esbuild produced no output");
    return checkInlineSafe(file.text);
  } catch (e) {
    if (e instanceof MedmmvError) throw e;
    throw new MedmmvError("INTERNAL", "building the view client failed", { cause: e });
  }
}

/** Writes the bundle to dist/view/client.js (or `outFile`) for installs without sources or esbuild. */
export function writeClientBundle(outFile?: string, root = packageRoot()): { file: string; bytes: number } {
  const file = outFile ?? path.join(root, CLIENT_OUTFILE);
  const code = buildClientBundle(root);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, code, "utf8");
  return { file, bytes: Buffer.byteLength(code) };
}

let cached: ClientBundle | null = null;

/** The bundle the page inlines, built once per process (see the file comment for the policy). */
export function clientBundle(): ClientBundle {
  if (cached) return cached;
  const root = packageRoot();
  const canBuild = existsSync(path.join(root, CLIENT_ENTRY)) && loadEsbuild() !== null;
  let code: string;
  let origin: ClientBundle["origin"];
  if (canBuild) {
    code = buildClientBundle(root);
    origin = "built";
  } else {
    const prebuilt = path.join(root, CLIENT_OUTFILE);
    if (!existsSync(prebuilt)) {
      throw new MedmmvError("INTERNAL", `view client bundle missing: run \`tsx src/server/view/build-client.ts\` to write ${CLIENT_OUTFILE}`);
    }
    code = checkInlineSafe(readFileSync(prebuilt, "utf8"));
    origin = "prebuilt";
  }
  cached = { code, sha256: sha256(code), origin };
  return cached;
}

// `tsx src/server/view/build-client.ts [outFile]` writes the prebuilt bundle.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const { file, bytes } = writeClientBundle(process.argv[2]);
  process.stdout.write(`wrote ${file} (${bytes} bytes)\n`);
}
