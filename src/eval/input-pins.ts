import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { MedmmvError } from "../core/contracts/errors.js";
import { VERSION } from "../core/version.js";

/** What a run read its items from: the file's SHA-256 and size, so a resumed run or a reader can tell it is the same file. */
export interface InputPin {
  sha256: string;
  bytes: number;
}

/** The product that produced a run: its version, and the git commit of the tree (with whether it had uncommitted changes), or a hash of its code and prompts where there is no git. */
export interface ProductPin {
  version: string;
  commit: string | null;
  /** Tracked files differed from the commit (null: unknown). */
  dirty: boolean | null;
  /** SHA-256 over src/ and prompts/ (paths and contents): names the code even without git. */
  sourceHash: string;
}

export async function pinInput(file: string): Promise<InputPin> {
  try {
    const { size } = await stat(file);
    const h = createHash("sha256");
    for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
    return { sha256: h.digest("hex"), bytes: size };
  } catch (e) {
    throw new MedmmvError("INVALID_INPUT", `cannot read --input ${file}: ${(e as Error).message}`, { cause: e });
  }
}

const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const run = promisify(execFile);

async function git(args: string[]): Promise<string | null> {
  try {
    const { stdout } = await run("git", args, { cwd: PACKAGE_ROOT, timeout: 5000 });
    return stdout.trim();
  } catch {
    return null; // not a git checkout, or no git: the source hash still names the code
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name)).sort();
}

let cached: Promise<ProductPin> | null = null;

/** Computed once per process (a hash of the sources takes tens of milliseconds). */
export function productPin(): Promise<ProductPin> {
  cached ??= (async () => {
    const [commit, status] = await Promise.all([git(["rev-parse", "HEAD"]), git(["status", "--porcelain", "--untracked-files=no"])]);
    const h = createHash("sha256");
    for (const dir of ["src", "prompts"]) {
      for (const f of await filesUnder(path.join(PACKAGE_ROOT, dir))) {
        h.update(path.relative(PACKAGE_ROOT, f) + "\u0000");
        h.update(await readFile(f));
        h.update("\u0000");
      }
    }
    return { version: VERSION, commit: commit && /^[0-9a-f]{40}$/.test(commit) ? commit : null, dirty: commit && status !== null ? status !== "" : null, sourceHash: h.digest("hex") };
  })();
  return cached;
}
