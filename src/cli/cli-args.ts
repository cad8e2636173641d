import { InvalidArgumentError } from "commander";

/** Exit codes of every command: 0 ok, 1 the case/run failed, 2 usage or configuration error, 130 interrupted. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

/** A commander parser for an integer flag within [min, max]. */
export function intArg(min: number, max: number) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    return n;
  };
}

/** A comma-separated list flag. */
export function listArg(v: string): string[] {
  return v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
