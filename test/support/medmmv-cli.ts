import { execFile, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The CLI as a user runs it (what the `medmmv` bin link runs). */
export const MEDMMV_BIN = fileURLToPath(new URL("../../bin/medmmv.js", import.meta.url));

/**
 * The test process's environment without what would configure a child's model, search or
 * store: a developer's own OPENAI_*, MEDMMV_*, TAVILY_* and DATABASE_URL must not reach it.
 */
export function cleanEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => {
      const [k, v] = e;
      return v !== undefined && !k.startsWith("OPENAI_") && !k.startsWith("MEDMMV_") && !k.startsWith("TAVILY_") && k !== "DATABASE_URL";
    }),
  );
}

export interface MedmmvCliRun {
  code: number;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/**
 * The CLI as a user runs it: a child process in the repository root, configured by the
 * environment alone (see cleanEnv). `started` gets the child (to kill it mid-run); `signal`
 * is what killed it, if anything did. `timeoutMs` (default 90 s) kills a child that hangs.
 */
export function medmmvCli(args: string[], env: Record<string, string>, input = "", started?: (child: ChildProcess) => void, opts: { timeoutMs?: number } = {}): Promise<MedmmvCliRun> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [MEDMMV_BIN, ...args], { cwd: ROOT, env: { ...cleanEnv(), ...env }, timeout: opts.timeoutMs ?? 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, signal: (err as { signal?: string } | null)?.signal ?? null, stdout, stderr });
    });
    started?.(child);
    child.stdin!.end(input);
  });
}
