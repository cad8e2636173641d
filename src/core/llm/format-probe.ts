import { z } from "zod";
import type { ChatMessage } from "./messages.js";

/**
 * The request that asks a server about its rules with nothing of any case in it: `medmmv models
 * check` sends it for every mode, and a call whose structured-output mode was answered in prose
 * sends it before the process switches modes (model-client.ts): a prose reply to a case's
 * prompt may come from the case's content, and one tenant's notes must not change the mode
 * every other tenant's calls use.
 */
export const PROBE_MARK = "medmmv-agent: models-check";
export const FormatProbe = z.object({ ok: z.boolean() }).describe("The health check's answer.");
export const FORMAT_PROBE_MESSAGES: ChatMessage[] = [
  { role: "system", content: `You answer health-check requests. ${PROBE_MARK}` },
  { role: "user", content: 'Reply with the JSON object {"ok": true} and nothing else.' },
];
