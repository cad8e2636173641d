import type { CallbackHandlerMethods } from "@langchain/core/callbacks/base";

/**
 * The provider's own words on a refused model call, for the CLI: its user is the operator
 * (the service keeps these for its server log, and tells the case's owner only the code and
 * a safe message). Each distinct reason is printed once, however many calls met it, as text
 * only: no control character of it reaches the terminal.
 */
export function printProviderReasons(write: (line: string) => void = (line) => process.stderr.write(line)): CallbackHandlerMethods {
  const seen = new Set<string>();
  return {
    handleLLMError(err: Error, _runId: string, _parentRunId?: string, tags?: string[]) {
      const e = err as Error & { status?: unknown };
      const agent = tags?.find((t) => t.startsWith("medmmv."))?.slice("medmmv.".length) ?? "model call";
      // Control and format characters out before the terminal sees them: a provider's text may
      // carry escape sequences (colours, cursor moves, a retitled window) or bidi overrides.
      const reason = String(e.message ?? "")
        .replace(/[\p{Cc}\p{Cf}]+/gu, " ")
        .replace(/\s+/g, " ")
        .trim()
        .slice(0, 500);
      const key = `${agent}|${reason}`;
      if (!reason || seen.has(key)) return;
      seen.add(key);
      write(`medmmv: ${agent}: the provider said${typeof e.status === "number" ? ` (HTTP ${e.status})` : ""}: ${reason}\n`);
    },
  };
}
