/**
 * The server and the CLI as child processes that start in about a second.
 *
 * Kill trials start a fresh process dozens of times. Through tsx each start costs 5–6 s
 * on a two-core machine (most of it transpiling and resolving thousands of module files),
 * so the trials would not fit in CI. Instead they run the CLI as a user does, `bin/medmmv.js`
 * (`medmmv serve` for a server): it runs from the CLI's own esbuild build of the sources,
 * split at every `await import()` so a command loads only what it uses, built once per version
 * of the sources for every process (bin/cli-bundle.mjs; the run's global setup builds it before
 * any test starts, test/support/build-cli.ts). The embedding example is not part of the CLI:
 * it is bundled here, once per test process, with `import.meta.url` pinned to each source
 * file's own URL, so prompts, package.json and the view assets resolve as they do under tsx.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { MEDMMV_BIN } from "./medmmv-cli.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** Inside the repository (so bare imports of the externals resolve to its node_modules), git-ignored. */
const BUNDLE_DIR = path.join(ROOT, "test-artifacts", ".bundles");

/** Packages that must load from node_modules: native addons, and packages that read their own files. */
const EXTERNAL = ["better-sqlite3", "pg", "pg-native", "esbuild", "playwright-core", "@fastify/swagger-ui", "tsx", "bullmq", "ioredis", "msgpackr", "msgpackr-extract"];

export type EntryKind = "server" | "cli" | "embed-example";

export interface Bundle {
  /** The script node runs. */
  file: string;
  /** The arguments before the caller's: the CLI's command (`serve`). */
  args: string[];
}

/** The embedding example as .ci/run runs it (through tsx there): the program a user copies. */
const EXAMPLE_ENTRY = `import ${JSON.stringify(path.join(ROOT, "examples/embed-custom-model.ts"))};\n`;

/** Bundle the embedding example to a file of its own (test processes run in parallel; names never clash). */
async function bundleExample(): Promise<Bundle> {
  const kind = "embed-example";
  mkdirSync(BUNDLE_DIR, { recursive: true });
  const file = path.join(BUNDLE_DIR, `${kind}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}.mjs`);
  await build({
    stdin: { contents: EXAMPLE_ENTRY, resolveDir: ROOT, loader: "ts", sourcefile: `${kind}-entry.ts` },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile: file,
    external: EXTERNAL,
    logLevel: "error",
    // CommonJS packages inside an ESM bundle still call require() for node built-ins.
    banner: { js: 'import { createRequire as __medmmvCreateRequire } from "node:module"; const require = __medmmvCreateRequire(import.meta.url);' },
    plugins: [
      {
        name: "pin-import-meta-url",
        setup(b) {
          b.onLoad({ filter: /[\\/](src|examples)[\\/].*\.ts$/ }, async (args) => {
            const source = await readFile(args.path, "utf8");
            return { contents: source.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)), loader: "ts" };
          });
        },
      },
    ],
  });
  return { file, args: [] };
}

let example: Promise<Bundle> | null = null;

/**
 * What a child of `kind` runs: the CLI (`medmmv …`), the server (`medmmv serve`), or the
 * embedding example's bundle, built once for every file of this test process (a worker runs
 * several files: isolate is off; a build takes ~2 s, ~1 s of CPU, here). Vitest ends its
 * workers without an exit event, so the example's bundles are removed by the run's global
 * teardown (sweepBundles).
 */
export function sharedBundle(kind: EntryKind): Promise<Bundle> {
  if (kind === "cli") return Promise.resolve({ file: MEDMMV_BIN, args: [] });
  if (kind === "server") return Promise.resolve({ file: MEDMMV_BIN, args: ["serve"] });
  if (!example) {
    example = bundleExample();
    example.catch(() => (example = null));
  }
  return example;
}

/** Whether a process of this pid exists (EPERM: it does, under another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The parent of a process, where /proc says (Linux); null elsewhere or when it has ended. */
function parentOf(pid: number): number | null {
  try {
    // /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

/**
 * Remove the bundles of test processes that have ended (each file is named after its pid), so
 * runs do not pile them up; a bundle of a process still running another vitest run is left.
 * `runOver`: this run's tests are done, so its own workers' bundles go too (vitest ends them
 * after the global teardown). vitest.config.ts runs it before and after every run (globalSetup).
 */
export function sweepBundles(runOver = false): void {
  let names: string[];
  try {
    names = readdirSync(BUNDLE_DIR);
  } catch {
    return; // no bundle was ever built here
  }
  for (const name of names) {
    const pid = Number(/^[a-z-]+?-(\d+)-/.exec(name)?.[1]);
    if (!Number.isInteger(pid)) continue;
    if (!alive(pid) || (runOver && parentOf(pid) === process.pid)) rmSync(path.join(BUNDLE_DIR, name), { force: true });
  }
}

/** Variables of the test runner's environment that would change the child's behaviour. */
const INHERITED_BLOCKLIST = /^(OPENAI_|MEDMMV_|TAVILY_|DATABASE_URL$|PORT$|HOST$|NODE_OPTIONS$)/;

function childEnv(env: Record<string, string>): Record<string, string> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && !INHERITED_BLOCKLIST.test(k))) as Record<string, string>;
  return { ...base, ...env };
}

export interface ChildRun {
  child: ChildProcess;
  output(): string;
  /** Resolves when the process has exited (by itself or by a signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Send a signal (if still running) and wait for the exit. */
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnBundle(bundle: Bundle, args: string[], env: Record<string, string>, opts: { maxMs?: number } = {}): ChildRun {
  const child = spawn(process.execPath, [bundle.file, ...bundle.args, ...args], { cwd: ROOT, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString("utf8")));
  child.stderr!.on("data", (c: Buffer) => (out += c.toString("utf8")));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  // A wedged child must not outlive the test run.
  const guard = setTimeout(() => child.kill("SIGKILL"), opts.maxMs ?? 120_000);
  guard.unref();
  void exited.then(() => clearTimeout(guard));
  return {
    child,
    output: () => out,
    exited,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface BundledServer extends ChildRun {
  /** e.g. http://127.0.0.1:41234 */
  address: string;
}

/** Start the bundled server and wait for its "medmmv listening" log line. */
export async function startBundledServer(bundle: Bundle, env: Record<string, string>, opts: { startTimeoutMs?: number } = {}): Promise<BundledServer> {
  const run = spawnBundle(bundle, [], { HOST: "127.0.0.1", PORT: "0", MEDMMV_LOG_LEVEL: "info", ...env });
  const timeoutMs = opts.startTimeoutMs ?? 30_000;
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      void run.kill("SIGKILL");
      reject(new Error(`server did not start within ${timeoutMs} ms:\n${run.output()}`));
    }, timeoutMs);
    const look = (): void => {
      for (const line of run.output().split("\n")) {
        if (!line.includes('"medmmv listening"')) continue;
        try {
          const rec = JSON.parse(line) as { address?: string };
          if (rec.address) {
            clearTimeout(timer);
            run.child.stdout!.off("data", look);
            resolve(rec.address);
            return;
          }
        } catch {
          // a partial line; the rest comes with the next chunk
        }
      }
    };
    run.child.stdout!.on("data", look);
    void run.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited (code ${code}, signal ${signal}) before listening:\n${run.output()}`));
    });
  });
  return { ...run, address };
}
