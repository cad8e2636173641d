import { describeZodIssues } from "../../contracts/zod-issues.js";
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { MedmmvError } from "../../contracts/errors.js";
import type { CorpusIndex, UpsertOutcome } from "./corpus-index.js";
import { CorpusRecord, isCorpusName, prepareDocument, type PreparedDocument } from "./corpus-record.js";

export interface LineError {
  line: number;
  message: string;
}

export interface IndexFileOutcome extends UpsertOutcome {
  corpus: string;
  /** Non-empty lines read. */
  records: number;
  chunks: number;
  errors: LineError[];
}

/** Documents written per transaction: large files never hold one giant write lock. */
const BATCH = 200;
const MAX_LINE_ERRORS_KEPT = 1000;

/**
 * Read a JSONL corpus file into the index under `corpus`. A bad line (not JSON, not a
 * record, a repeated id) is reported with its line number and skipped; the rest goes in.
 * Indexing the same file again changes nothing (records are keyed by id and content hash).
 */
export async function indexCorpusFile(index: CorpusIndex, file: string, corpus: string): Promise<IndexFileOutcome> {
  if (!isCorpusName(corpus)) throw new MedmmvError("INVALID_INPUT", "corpus name must be 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit");
  const out: IndexFileOutcome = { corpus, records: 0, chunks: 0, added: 0, updated: 0, unchanged: 0, errors: [] };
  const reject = (line: number, message: string) => {
    if (out.errors.length < MAX_LINE_ERRORS_KEPT) out.errors.push({ line, message });
  };
  const firstSeen = new Map<string, number>();
  let batch: PreparedDocument[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const r = await index.upsert(corpus, batch);
    out.added += r.added;
    out.updated += r.updated;
    out.unchanged += r.unchanged;
    batch = [];
  };

  const stream = createReadStream(file, { encoding: "utf8" });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once("open", () => resolve());
    stream.once("error", reject);
  });
  try {
    await opened;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new MedmmvError(code === "ENOENT" ? "NOT_FOUND" : "INVALID_INPUT", `cannot read corpus file ${file}${code ? ` (${code})` : ""}`, { cause: e });
  }
  let lineNo = 0;
  for await (const raw of createInterface({ input: stream, crlfDelay: Infinity })) {
    lineNo++;
    const line = raw.replace(/^\uFEFF/, "").trim();
    if (!line) continue;
    out.records++;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      reject(lineNo, "not valid JSON");
      continue;
    }
    const parsed = CorpusRecord.safeParse(json);
    if (!parsed.success) {
      reject(lineNo, describeZodIssues(parsed.error).message);
      continue;
    }
    const first = firstSeen.get(parsed.data.id);
    if (first !== undefined) {
      reject(lineNo, `duplicate id ${JSON.stringify(parsed.data.id)} (first on line ${first}); skipped`);
      continue;
    }
    firstSeen.set(parsed.data.id, lineNo);
    const doc = prepareDocument(parsed.data);
    out.chunks += doc.chunks.length;
    batch.push(doc);
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  return out;
}
