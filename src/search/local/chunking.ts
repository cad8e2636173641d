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
  if (clean.length <= opts.size) return clean ? [clean] : [];
  const chunks: string[] = [];
  let start = 0;
  while (start < clean.length) {
    let end = Math.min(clean.length, start + opts.size);
    // Cut at the last space inside the window, so words are never split.
    if (end < clean.length) {
      const space = clean.lastIndexOf(" ", end);
      if (space > start + opts.overlap) end = space;
    }
    chunks.push(clean.slice(start, end).trim());
    if (end >= clean.length) break;
    // Step back by the overlap, then forward to a word start.
    let next = Math.max(start + 1, end - opts.overlap);
    const space = clean.indexOf(" ", next);
    if (space !== -1 && space < end) next = space + 1;
    start = next;
  }
  return chunks;
}
