import { open, readFile, rename, truncate, type FileHandle } from "node:fs/promises";
import type { HealthBenchRecord } from "./healthbench/types.js";
import type { OpenMatchRecord } from "./open/types.js";
import type { Usage } from "../core/contracts/diagnosis-result.js";
import { MedmmvError } from "../core/contracts/errors.js";
import type { GoldAnswer } from "./datasets/types.js";
import type { HypothesisRecord, PermutationRecord } from "./probes/types.js";
import type { StagewiseRecord } from "./stagewise/types.js";
import type { CallTrace } from "./call-log.js";

export const RESULTS_FILE = "results.jsonl";

export type RecordStatus = "completed" | "abstained" | "failed";
export type Stage = "visual" | "knowledge" | "reasoning";

/** One rater's scores for one record (docs/architecture.md#scores); `consistency` is null for an item without images. */
export interface RecordRating {
  rater: string;
  truthfulness: number;
  informativeness: number;
  consistency: number | null;
  txi: number;
  rel: number;
}

/** One line of results.jsonl: a finished (id, run) pair. */
export interface ResultRecord {
  id: string;
  run: number;
  method: string;
  status: RecordStatus;
  /** What the path said (kept for audit, also on an abstained record). Scorers read `prediction`. */
  answer: { option: string | null; text: string } | null;
  /** The answer counted: the letter (or, without options, the text) of a completed item; null for abstained and failed ones (prediction.ts). Absent in older folders. */
  prediction?: string | null;
  gold: GoldAnswer;
  correct: boolean;
  strata: Record<string, string>;
  usage: Usage;
  /** CU parts of the selected path (MedMMV only). */
  cu: { pathId: string; evidence: number; coherence: number; repairPenalty: number; cu: number; repairs: number } | null;
  answerSupport: number | null;
  /** Rollout (or sample) answers in order, RGM and final entropy; null for single-call methods. */
  stability: { answers: (string | null)[]; rgm: number; entropy: number; /** The model of each answer's rollout (MedMMV). */ models?: string[] } | null;
  /** Flagged claims by stage over all HD attempts of all paths; `resolved` were repaired away. */
  hallucinations: { visual: number; knowledge: number; reasoning: number; total: number; resolved: number };
  /** Branch failures that did not sink the item (a rollout, a search…). */
  errors: Array<{ branch: string; code: string; message: string }>;
  /** Why the item failed (status "failed") or abstained. */
  error?: { code: string; message: string };
  abstentionReason?: string;
  ratings?: RecordRating[];
  ratingErrors?: Array<{ rater: string; code: string; message: string }>;
  ratingUsage?: Usage;
  warnings?: string[];
  /** Robustness probes (docs/evaluation.md#robustness-probes): the clinician's statement the case carried, the option order it was shown. */
  hypothesis?: HypothesisRecord;
  permutation?: PermutationRecord;
  /** ClinHallu stage-wise diagnosis (docs/evaluation.md#stage-wise-hallucination-diagnosis-clinhallu): the trace, its stage verdicts and the replacement runs. */
  stagewise?: StagewiseRecord;
  /** HealthBench: the rubric grader's verdicts and the reply's scores (src/eval/healthbench/). */
  healthbench?: HealthBenchRecord;
  /** --open: how the open answer was matched with the gold text, and what exact match said (src/eval/open/). */
  openMatch?: OpenMatchRecord;
  /** The final path's steps with their stage tags (kept on a --stage-judge checkpoint, so judging resumes without re-running the method). */
  steps?: Array<{ text: string; stage: Stage }>;
  /** --save-results (MedMMV): the item's DiagnosisResult with its full evidence graph, relative to the run folder (`medmmv report` renders it). */
  resultFile?: string;
  /** Every model reply of the item's last attempt, in order of completion: agent, the model id and system fingerprint the server reported, the raw text (capped; call-log.ts). Calls served by the response cache are not among them. */
  calls?: CallTrace[];
  /** Replies beyond the MAX_CALLS_KEPT kept. */
  callsNotKept?: number;
  /** How many times the item was run in this session (transient failures are retried). */
  attempts: number;
  finishedAt: string;
}

export const recordKey = (id: string, run: number): string => `${run}\u0000${id}`;

export interface ReadResults {
  /** Last record per (id, run), in order of first appearance. */
  records: ResultRecord[];
  lines: number;
  /** Lines that were not a JSON record with an id and a run (skipped). */
  invalidLines: number;
  /** The file ended in the middle of a line (a run killed mid-write). */
  tornTail: boolean;
}

function asRecord(line: string): ResultRecord | null {
  try {
    const v = JSON.parse(line) as Partial<ResultRecord> | null;
    if (v && typeof v === "object" && typeof v.id === "string" && Number.isInteger(v.run) && typeof v.status === "string") return v as ResultRecord;
  } catch {
    // not JSON: counted by the caller
  }
  return null;
}

/**
 * Read results.jsonl tolerantly: a torn last line (the process was killed while writing)
 * and stray bad lines are skipped, and a (id, run) written twice (a failed item retried
 * on resume) counts once, with its last record.
 */
export async function readResults(file: string): Promise<ReadResults> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return { records: [], lines: 0, invalidLines: 0, tornTail: false };
    throw new MedmmvError("INVALID_INPUT", `cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  const parts = text.split("\n");
  const tail = parts.pop() ?? "";
  const byKey = new Map<string, ResultRecord>();
  let invalidLines = 0;
  let lines = 0;
  const take = (line: string) => {
    if (line.trim() === "") return;
    lines++;
    const r = asRecord(line);
    if (!r) {
      invalidLines++;
      return;
    }
    const key = recordKey(r.id, r.run);
    byKey.set(key, r); // a Map keeps the first position and takes the last value
  };
  for (const line of parts) take(line);
  let tornTail = false;
  if (tail.trim() !== "") {
    // A last line without its newline: complete JSON (killed between the two) or torn.
    if (asRecord(tail)) take(tail);
    else tornTail = true;
  }
  return { records: [...byKey.values()], lines, invalidLines, tornTail };
}

/**
 * Rewrite the file with only the last record of each (id, run), in order of first
 * appearance: what readResults returns, so nothing a reader sees changes. For runs whose
 * items checkpoint their phases (stage-wise), which leave many superseded lines behind.
 * Written to a temporary file, synced, then renamed over the original.
 */
export async function compactResults(file: string): Promise<void> {
  const { records } = await readResults(file);
  const tmp = `${file}.${process.pid}.compact`;
  const handle = await open(tmp, "w");
  try {
    for (const r of records) await handle.write(JSON.stringify(r) + "\n");
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
}

/**
 * Appends one record per line and syncs it to disk before its `append` resolves, so a killed
 * run loses only the items still in flight. Records that arrive while a write is on its way
 * go out together in the next one (one write, one sync): at a hundred items a second the
 * items never queue behind each other's syncs. Lines are whole and never interleave.
 */
export class ResultsWriter {
  /** Lines waiting for the next write, with their callers. */
  private batch: Array<{ line: string; done: (err?: unknown) => void }> = [];
  private writing: Promise<void> | null = null;

  private constructor(private readonly handle: FileHandle) {}

  /** Open for appending; a torn last line from a killed run is cut off first, so the next record starts on a line of its own. */
  static async open(file: string): Promise<ResultsWriter> {
    let text = "";
    try {
      text = await readFile(file, "utf8");
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw new MedmmvError("INVALID_INPUT", `cannot read ${file}: ${(e as Error).message}`, { cause: e });
    }
    const handle = await open(file, "a");
    if (text !== "" && !text.endsWith("\n")) {
      const cut = text.lastIndexOf("\n") + 1;
      const tail = text.slice(cut);
      if (asRecord(tail)) await handle.write("\n");
      else {
        await handle.close();
        await truncate(file, Buffer.byteLength(text.slice(0, cut)));
        return new ResultsWriter(await open(file, "a"));
      }
    }
    return new ResultsWriter(handle);
  }

  append(record: ResultRecord): Promise<void> {
    const line = JSON.stringify(record) + "\n";
    return new Promise((resolve, reject) => {
      this.batch.push({ line, done: (err) => (err === undefined ? resolve() : reject(err)) });
      this.writing ??= this.drain();
    });
  }

  /** Writes batches until none is waiting; a failed write fails its own batch's callers only. */
  private async drain(): Promise<void> {
    while (this.batch.length > 0) {
      const batch = this.batch;
      this.batch = [];
      try {
        await this.handle.write(batch.map((b) => b.line).join(""));
        await this.handle.datasync();
        for (const b of batch) b.done();
      } catch (err) {
        for (const b of batch) b.done(err);
      }
    }
    this.writing = null;
  }

  async close(): Promise<void> {
    await this.writing;
    await this.handle.close();
  }
}
