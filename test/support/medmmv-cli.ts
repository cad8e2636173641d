import { execFile, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = fileURLToPath(new URL("../../bin/medmmv.js", import.meta.url));

/**
 * The CLI as a user runs it: a child process in the repository root, configured by the
 * environment alone (the test process's own model and store variables are left out).
 * `started` gets the child (to kill it mid-run); `signal` is what killed it, if anything did.
 */
export function medmmvCli(args: string[], env: Record<string, string>, input = "", started?: (child: ChildProcess) => void): Promise<{ code: number; signal: string | null; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("OPENAI_") && !k.startsWith("MEDMMV_") && !k.startsWith("TAVILY_")));
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...clean, ...env }, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, signal: (err as { signal?: string } | null)?.signal ?? null, stdout, stderr });
    });
    started?.(child);
    child.stdin!.end(input);
  });
}
