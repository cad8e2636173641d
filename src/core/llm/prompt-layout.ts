/**
 * The fixed text that ends the shared part of every agent prompt (agents/agent-context.ts):
 * the reply's JSON Schema follows it on one line (JSON.stringify writes no raw newline), and
 * what varies per call comes after that line. Providers that cache only marked prefixes
 * (Anthropic) put a breakpoint at the end of that line (anthropic-chat-model.ts).
 */
export const SCHEMA_LEAD = "Reply with a JSON object that matches this JSON Schema:\n";

/** The lines that close the case block and the evidence block, shared by every prompt that carries them (breakpoints too). */
export const CASE_END = "CASE>>>";
export const EVIDENCE_END = "EVIDENCE>>>";
