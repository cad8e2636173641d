import { createHash } from "node:crypto";
import { z } from "zod";
import { chunkText, DEFAULT_CHUNKING, type ChunkOptions } from "./chunking.js";

/** One line of a corpus JSONL file. */
export const CorpusRecord = z.object({
  id: z.string().trim().min(1).max(200).describe("Stable id of the passage within its corpus; re-indexing replaces the record with this id"),
  title: z.string().trim().min(1).max(500).describe("Title shown with every hit"),
  text: z.string().trim().min(1).max(2_000_000).describe("The passage or document text; long texts are chunked with overlap"),
  url: z
    .string()
    .url()
    .max(2000)
    .refine((u) => /^https?:\/\//i.test(u), { message: "url must be http(s)" })
    .optional()
    .describe("Where the passage comes from; provenance of its hits (else corpus://NAME/ID)"),
  source: z.string().trim().max(300).optional().describe("Publisher, guideline or book the passage is from"),
});
export type CorpusRecord = z.infer<typeof CorpusRecord>;

const CORPUS_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export function isCorpusName(name: string): boolean {
  return CORPUS_NAME.test(name);
}

/** A record ready for an index: its chunks and a hash that says whether it changed. */
export interface PreparedDocument {
  id: string;
  title: string;
  url: string | null;
  source: string | null;
  contentHash: string;
  chunks: string[];
}

/** Part of every content hash: a change to how texts are chunked re-chunks what is already indexed. */
const CHUNKER_VERSION = 1;

export function prepareDocument(r: CorpusRecord, chunking: ChunkOptions = DEFAULT_CHUNKING): PreparedDocument {
  const url = r.url ?? null;
  const source = r.source ?? null;
  const contentHash = createHash("sha256")
    .update(JSON.stringify([CHUNKER_VERSION, r.title, r.text, url, source, chunking.size, chunking.overlap]))
    .digest("hex");
  return { id: r.id, title: r.title, url, source, contentHash, chunks: chunkText(r.text, chunking) };
}

/** The provenance URL of a hit: the record's own, else one that names corpus and record. */
export function hitUrl(corpus: string, docId: string, url: string | null): string {
  return url ?? `corpus://${corpus}/${encodeURIComponent(docId)}`;
}
