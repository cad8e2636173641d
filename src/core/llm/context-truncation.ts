/**
 * A prompt the server cut without saying so. Ollama's OpenAI-compatible endpoint runs a model
 * at its context window (4k tokens by default below 24 GiB of VRAM: docs.ollama.com
 * context-length) and cannot be asked for more (it ignores options.num_ctx there); a longer
 * prompt is cut — its runner keeps the head and the tail — and answered 200 as if whole
 * (github.com/orgs/infiniflow/discussions/10500: "Ollama truncating input prompt"). The reply's
 * usage.prompt_tokens tells it: the tokens the model read.
 *
 * English clinical text runs at about 4 characters a token with every tokenizer in use (3–5,
 * lower for numbers, JSON and other scripts): a prompt whose reported tokens mean more than
 * MAX_CHARS_PER_TOKEN characters each was not read whole. Image tokens only add to the count,
 * so they can hide a cut, never fake one.
 */
export const MAX_CHARS_PER_TOKEN = 6;
/** Below this many characters a prompt is not judged: a short prompt's count is dominated by the chat template. */
export const MIN_JUDGED_CHARS = 2_000;
/** What a whole prompt of so many characters is expected to count (4 characters a token). */
export const CHARS_PER_TOKEN = 4;

export interface CutPrompt {
  promptTokens: number;
  expectedTokens: number;
  promptChars: number;
}

/** The cut, when the reported prompt tokens cannot hold `textChars` characters of prompt text; null when they can. */
export function truncatedPrompt(textChars: number, promptTokens: number | undefined, contextWindow: number | null = null): CutPrompt | null {
  if (promptTokens === undefined || promptTokens <= 0 || textChars < MIN_JUDGED_CHARS) return null;
  const expectedTokens = Math.ceil(textChars / CHARS_PER_TOKEN);
  const tooDense = textChars / promptTokens > MAX_CHARS_PER_TOKEN;
  // A window the profile states, that the prompt needs and the count stops short of, tells the same.
  const belowWindow = contextWindow !== null && expectedTokens > contextWindow && promptTokens < expectedTokens / 1.5;
  return tooDense || belowWindow ? { promptTokens, expectedTokens, promptChars: textChars } : null;
}
