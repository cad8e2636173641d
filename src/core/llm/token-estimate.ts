/**
 * Token counts for a reply that came without `usage` (some gateways and local servers leave it
 * out): counted from the prompt's and the reply's text with OpenAI's cl100k_base tokenizer
 * (js-tiktoken, which ships its ranks in the package: nothing is downloaded), and marked
 * estimated wherever they are shown. Another model's tokenizer counts differently, by some
 * percent: an estimate, never a zero. cl100k_base rather than o200k_base: building the
 * encoder parses its ranks on the main thread, once per process, about 0.8 s for cl100k_base
 * and 3 s for o200k_base here; the counts differ by a few percent on English text.
 */
type Encoder = { encode(text: string): number[] };
let encoder: Promise<Encoder> | null = null;

function load(): Promise<Encoder> {
  // Loaded on the first reply without usage: a process whose replies all state usage never parses the ranks.
  encoder ??= (async () => {
    const [{ Tiktoken }, { default: ranks }] = await Promise.all([import("js-tiktoken/lite"), import("js-tiktoken/ranks/cl100k_base")]);
    return new Tiktoken(ranks);
  })();
  return encoder;
}

export async function estimateTokens(text: string): Promise<number> {
  if (!text) return 0;
  return (await load()).encode(text).length;
}
