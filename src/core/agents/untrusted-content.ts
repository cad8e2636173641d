/**
 * Heuristic scan for prompt-injection attempts in text we pass to models (case text,
 * search results, other models' output). A hit does not change what the pipeline does —
 * delimiters and the system prompt already treat such text as data — but it is recorded
 * in provenance.untrustedContent so auditors see that someone tried.
 */
const PATTERNS: Array<[RegExp, string]> = [
  [/\b(ignore|disregard|forget)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|your)\b[^.\n]{0,30}\b(instructions?|prompts?|rules?|directions?)\b/i, "asks to ignore instructions"],
  [/\b(print|reveal|show|repeat|output|leak)\b[^.\n]{0,40}\b(system|hidden|initial)\s+(prompt|instructions?|message)\b/i, "asks for the system prompt"],
  [/\b(you are now|act as|pretend to be|new instructions?:)\b/i, "tries to re-assign the model's role"],
  [/\b(always|must|should)\s+(answer|respond|choose|select|pick)\b[^.\n]{0,20}\b(option\s+)?\(?[A-J]\)?(?![a-z])/i, "dictates the answer"],
  [/<\/?(system|assistant|instructions?)>|\[\/?INST\]|<\|im_start\|>/i, "contains chat-template control tokens"],
];

export function scanForInjection(text: string | undefined | null): string | null {
  if (!text) return null;
  for (const [re, note] of PATTERNS) if (re.test(text)) return note;
  return null;
}

/**
 * Keep an outbound search query to medical terms: words that occur in the case text but
 * not in the labels of the facts being searched are case details (names, places, dates)
 * the query writer should not have used, and are dropped. General words are kept.
 */
export function restrictQueryToFacts(query: string, factLabels: string[], caseText: string): string {
  const words = (s: string) => s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const allowed = new Set(factLabels.flatMap(words));
  const inCase = new Set(words(caseText));
  return query
    .split(/\s+/)
    .filter((tok) => {
      const ws = words(tok);
      return ws.every((w) => allowed.has(w) || !inCase.has(w));
    })
    .join(" ")
    .trim();
}
