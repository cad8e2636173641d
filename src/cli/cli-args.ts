import { InvalidArgumentError } from "commander";
import { isMedmmvError, type ErrorCode } from "../core/contracts/errors.js";

/** Exit codes of every command: 0 ok, 1 the case/run failed, 2 usage or configuration error, 130 interrupted. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

/** The errors the user fixes by changing the command, its input or the configuration. */
const USAGE_CODES: readonly ErrorCode[] = ["INVALID_INPUT", "CONFLICT", "CONFIG_MISSING", "MODEL_NOT_CONFIGURED", "CONFIG_INVALID", "NOT_FOUND"];

/** A command's exit code for an error it stops on: usage (2) for those, failed (1) for the rest. */
export function exitCodeFor(err: unknown): number {
  return isMedmmvError(err) && USAGE_CODES.includes(err.code) ? EXIT.usage : EXIT.failed;
}

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
