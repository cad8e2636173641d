// The CLI's sources as plain JavaScript, built once per version of the sources and cached.
//
// Through tsx every start resolves and transpiles the whole module graph on a loader thread:
// about a second before `medmmv --help` prints, and the same again before `medmmv eval`
// starts its first item. esbuild (a dependency already, for the audit view) bundles the CLI
// instead, split at every `await import()`, so a command loads only its own chunks, with no
// loader in between. Nothing changes for a clone: the first run builds (a few seconds), every
// later run of the same sources starts from the cache, and a source edit rebuilds.
//
// Plain JavaScript on purpose: it runs before anything that could load TypeScript.
import { createHash } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ENTRY = path.join(ROOT, "src", "cli", "main.ts");
const CACHE = path.join(ROOT, "node_modules", ".cache", "medmmv-cli");
/** A cached build unused (not started from) for this long is removed when another is written (a running `serve` may still load chunks of its own). */
const KEEP_MS = 24 * 3600 * 1000;
/** How long an empty lock (created, its pid not yet written) counts as held. */
const EMPTY_LOCK_MS = 60_000;
/** In each build: { "chunk-….js": ["src/…", "node_modules/…", …] }. */
export const SOURCES_FILE = "sources.json";

/** Packages loaded from node_modules: native addons, and packages that read their own files. */
const EXTERNAL = ["better-sqlite3", "pg", "pg-native", "esbuild", "playwright-core", "@fastify/swagger-ui", "tsx", "bullmq", "ioredis", "msgpackr", "msgpackr-extract", "sharp", "dcmjs", "dcmjs-imaging"];

/**
 * What the build depends on, first part: every file under src/ (path, mtime, size), the
 * lockfile, npm's record of what is installed (node_modules/.package-lock.json, rewritten by
 * every npm install, `--no-save` ones included) and this file (the build's settings). A stat
 * per file, a few ms.
 */
export function sourceStamp(root = ROOT) {
  const hash = createHash("sha256");
  const add = (file) => {
    const s = statSync(file, { throwIfNoEntry: false });
    hash.update(`${file}\0${s ? `${s.mtimeMs}\0${s.size}` : "-"}\n`);
  };
  for (const e of readdirSync(path.join(root, "src"), { recursive: true, withFileTypes: true })) {
    if (e.isFile()) add(path.join(e.parentPath ?? e.path, e.name));
  }
  for (const f of ["package-lock.json", "package.json", "node_modules/.package-lock.json", "bin/cli-bundle.mjs"]) add(path.join(root, f));
  hash.update(process.version);
  return hash.digest("hex").slice(0, 16);
}

/**
 * Second part: the installed version of every package the bundle holds, as each package's own
 * package.json (path, mtime, size; its content, hashed, where it is small). A dependency
 * swapped or patched in node_modules by hand, with no lockfile change, changes it, and the
 * bundle is built again rather than carrying the old code. About 200 stats.
 */
export function packagesStamp(packages, root = ROOT) {
  const hash = createHash("sha256");
  for (const dir of packages) {
    const file = path.join(root, dir, "package.json");
    const s = statSync(file, { throwIfNoEntry: false });
    hash.update(`${dir}\0${s ? `${s.mtimeMs}\0${s.size}\0${s.size < 8192 ? createHash("sha256").update(readFileSync(file)).digest("hex") : ""}` : "-"}\n`);
  }
  return hash.digest("hex").slice(0, 16);
}

/** The package directories (node_modules/x, node_modules/@s/x, nested ones too) the bundle's inputs come from. */
export function bundledPackages(inputs) {
  const dirs = new Set();
  for (const input of inputs) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input.replaceAll("\\", "/"));
    if (m) dirs.add(m[1]);
  }
  return [...dirs].sort();
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

/** One builder at a time: the lock holds its pid; a lock whose process is gone is taken over. */
function takeLock(lock) {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if (e.code !== "EEXIST") return false;
      const holder = Number(readFileSync(lock, { encoding: "utf8", flag: "r" }).trim() || "0");
      if (holder > 0 && alive(holder)) return false;
      // An empty lock is a builder between creating it and writing its pid: held, unless it is old
      // (a builder that died in that instant).
      if (!(holder > 0) && Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? 0) < EMPTY_LOCK_MS) return false;
      rmSync(lock, { force: true });
    }
  }
  return false;
}

async function build(dir) {
  const { build: esbuild } = await import("esbuild");
  const { readFile } = await import("node:fs/promises");
  // The build lives under node_modules, where Node finds no package scope: without this, every
  // chunk's format is detected by compiling it as CommonJS first, then again as a module.
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "package.json"), '{ "type": "module" }\n');
  const { metafile } = await esbuild({
    absWorkingDir: ROOT,
    metafile: true,
    entryPoints: { main: ENTRY },
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: `node${process.versions.node.split(".")[0]}`,
    outdir: dir,
    external: EXTERNAL,
    sourcemap: "linked",
    // Whitespace and syntax only, names kept (libraries read class and function names): a
    // command compiles what it loads before it can start, and the smaller text compiles faster
    // (eval's first model call 515 -> 465 ms after spawn, median of 5). The linked source map
    // still points profiles and stack traces at the sources.
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: "silent",
    // CommonJS packages inside an ESM bundle still call require() for node built-ins.
    banner: { js: 'import { createRequire as __medmmvCreateRequire } from "node:module"; const require = __medmmvCreateRequire(import.meta.url);' },
    plugins: [
      {
        // Prompts, pathways, package.json and the DICOM worker are found next to each source
        // file (`new URL(…, import.meta.url)`): keep each file's own URL, as under tsx.
        name: "pin-import-meta-url",
        setup(b) {
          b.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, async (args) => ({
            contents: (await readFile(args.path, "utf8")).replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)),
            loader: "ts",
          }));
        },
      },
    ],
  });
  // Which sources each output file holds (repository-relative), for the test that checks
  // what a command loads.
  const sources = Object.fromEntries(Object.entries(metafile.outputs).filter(([out]) => out.endsWith(".js")).map(([out, o]) => [path.basename(out), Object.keys(o.inputs)]));
  writeFileSync(path.join(dir, SOURCES_FILE), JSON.stringify(sources));
  return bundledPackages(Object.keys(metafile.inputs));
}

function pruneOld(keep) {
  const now = Date.now();
  for (const name of readdirSync(CACHE)) {
    if (keep.includes(name) || name.endsWith(".lock")) continue;
    const p = path.join(CACHE, name);
    try {
      if (now - statSync(p).mtimeMs > KEEP_MS) rmSync(p, { recursive: true, force: true });
    } catch {
      // another process pruned it first
    }
  }
}

/**
 * The URL of the built CLI for the current sources, building it if needed; null when it
 * cannot be had now (another process is building it, the cache is not writable, esbuild is
 * missing): the caller then runs the sources through tsx, as before.
 */
export async function cliBundle() {
  try {
    const stamp = sourceStamp();
    // The packages the last build of these sources held, so their versions can be checked.
    const packagesFile = path.join(CACHE, `${stamp}.packages.json`);
    const packages = existsSync(packagesFile) ? JSON.parse(readFileSync(packagesFile, "utf8")) : null;
    if (packages) {
      const dir = path.join(CACHE, `${stamp}-${packagesStamp(packages)}`);
      const main = path.join(dir, "main.js");
      if (existsSync(main)) {
        // Marked as used, so pruning (by age) never removes a build a running process started from today.
        try {
          const now = new Date();
          utimesSync(dir, now, now);
        } catch {
          // a read-only cache (the Docker image): nothing prunes it either
        }
        return pathToFileURL(main).href;
      }
    }
    mkdirSync(CACHE, { recursive: true });
    const lock = path.join(CACHE, `${stamp}.lock`);
    if (!takeLock(lock)) return null;
    let main;
    try {
      // Built beside its final place and renamed into it: a reader sees all of it or none.
      const tmp = path.join(CACHE, `${stamp}.tmp-${process.pid}`);
      rmSync(tmp, { recursive: true, force: true });
      const built = await build(tmp);
      const name = `${stamp}-${packagesStamp(built)}`;
      const dir = path.join(CACHE, name);
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
      writeFileSync(`${packagesFile}.tmp-${process.pid}`, JSON.stringify(built));
      renameSync(`${packagesFile}.tmp-${process.pid}`, packagesFile);
      pruneOld([name, `${stamp}.packages.json`]);
      main = path.join(dir, "main.js");
    } finally {
      rmSync(lock, { force: true });
    }
    return pathToFileURL(main).href;
  } catch {
    return null;
  }
}
