/**
 * Long corpus texts are split into overlapping passages so a hit points at the part of a
 * document that matched (BM25 over a whole book favours nothing) and a sentence cut at a
 * boundary still appears whole in one of the two neighbouring chunks.
 */
export interface ChunkOptions {
  /** Target passage length in characters. */
  size: number;
  /** Characters repeated from the end of one chunk at the start of the next. */
  overlap: number;
}

export const DEFAULT_CHUNKING: ChunkOptions = { size: 1200, overlap: 200 };

export function chunkText(text: string, opts: ChunkOptions = DEFAULT_CHUNKING): string[] {
  if (opts.size <= 0 || opts.overlap < 0 || opts.overlap >= opts.size) throw new RangeError("chunk overlap must be smaller than the chunk size");
  const clean = text.replace(/\s+/g, " ").trim();
  if (!clean) return [];
  if (clean.length <= opts.size) return [clean];
  // Whole words only: a word longer than the chunk size is a chunk of its own.
  const words = clean.split(" ");
  const chunks: string[] = [];
  let i = 0;
  for (;;) {
    let j = i + 1;
    let len = words[i]!.length;
    while (j < words.length && len + 1 + words[j]!.length <= opts.size) len += 1 + words[j++]!.length;
    chunks.push(words.slice(i, j).join(" "));
    if (j >= words.length) return chunks;
    // The next chunk repeats the last words that fit in the overlap, and always moves forward.
    let k = j;
    let back = 0;
    while (k - 1 > i && back + words[k - 1]!.length + (back ? 1 : 0) <= opts.overlap) back += words[--k]!.length + (back ? 1 : 0);
    i = k;
  }
}
