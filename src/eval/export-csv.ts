import path from "node:path";
import { readResults, RESULTS_FILE, type ResultRecord } from "./results-file.js";
import { predictionOf } from "./prediction.js";

/**
 * `eval export DIR --format csv`: one row per item-run, RFC 4180 (every field quoted where it
 * holds a comma, a quote or a line break; UTF-8; header first), so pandas.read_csv, R and a
 * spreadsheet read it as it is. Strata become `strata.<field>` columns.
 */
const FIXED = ["id", "run", "method", "status", "prediction", "gold", "gold_text", "correct", "answer_option", "abstention_reason", "error_code", "cost_usd", "prompt_tokens", "completion_tokens", "llm_calls", "wall_ms", "attempts"] as const;

function quote(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined) return "";
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** What a record predicts; older records (written before `prediction`) get it from their status and answer. */
function predictionFor(r: ResultRecord): string | null {
  return r.prediction !== undefined ? r.prediction : predictionOf(r.status, r.answer, r.gold);
}

export function recordsCsv(records: readonly ResultRecord[]): string {
  const strata = [...new Set(records.flatMap((r) => Object.keys(r.strata ?? {})))].sort();
  const lines = [[...FIXED, ...strata.map((s) => `strata.${s}`)].map(quote).join(",")];
  for (const r of records) {
    const row: Array<string | number | boolean | null | undefined> = [
      r.id,
      r.run,
      r.method,
      r.status,
      predictionFor(r),
      r.gold.option ?? r.gold.text,
      r.gold.text,
      r.correct,
      r.answer?.option ?? null,
      r.abstentionReason ?? null,
      r.error?.code ?? null,
      r.usage.costUsd + (r.ratingUsage?.costUsd ?? 0),
      r.usage.promptTokens + (r.ratingUsage?.promptTokens ?? 0),
      r.usage.completionTokens + (r.ratingUsage?.completionTokens ?? 0),
      r.usage.llmCalls,
      r.usage.wallMs,
      r.attempts,
      ...strata.map((s) => r.strata?.[s]),
    ];
    lines.push(row.map(quote).join(","));
  }
  return lines.join("\r\n") + "\r\n";
}

export async function exportCsv(dir: string): Promise<{ csv: string; rows: number }> {
  const { records } = await readResults(path.join(dir, RESULTS_FILE));
  return { csv: recordsCsv(records), rows: records.length };
}
