import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { BaseMessage } from "@langchain/core/messages";
import type { LLMResult } from "@langchain/core/outputs";

/** Each reply's text is kept up to this many characters (docs/evaluation.md#what-a-record-holds-prediction-raw-output-pinned-inputs). */
export const RAW_TEXT_CAP = 4000;
/** At most this many replies per record: the full method makes dozens of calls an item. */
export const MAX_CALLS_KEPT = 64;
/** At most this many characters of reply text per record (about 32 KB: 3,500 records stay near 100 MB); later replies keep their model and fingerprint, not their text. */
export const RECORD_TEXT_CAP = 32_000;

/** One model reply as the server gave it: which agent asked, the model id and system fingerprint the server reported, and the raw text (capped). */
export interface CallTrace {
  agent: string;
  /** The model the server says answered (`model` of the reply), which may differ from the name asked for (an alias, a dated snapshot). */
  model: string | null;
  /** OpenAI's `system_fingerprint` (the backend configuration that answered); null where the server gives none. */
  systemFingerprint: string | null;
  text: string;
  /** The reply was longer than RAW_TEXT_CAP characters: this many were cut. */
  cut?: number;
}

/** The calls of one record, and how many more were made than kept. */
export interface RecordCalls {
  calls: CallTrace[];
  callsNotKept?: number;
}

type Entry = RecordCalls & { chars: number };

function textOf(message: BaseMessage | undefined): string {
  if (!message) return "";
  const c = message.content;
  const text = typeof c === "string" ? c : Array.isArray(c) ? c.map((p) => (typeof p === "string" ? p : "text" in p && typeof p.text === "string" ? p.text : "")).join("") : "";
  if (text.trim()) return text;
  // Tool calling: the reply is the tool call's arguments.
  const tools = (message as { tool_calls?: Array<{ args?: unknown }> }).tool_calls;
  return tools?.length ? JSON.stringify(tools.length === 1 ? tools[0]!.args : tools.map((t) => t.args)) : "";
}

const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);

/**
 * Hears every model run of the eval's clients (a LangChain callback handler) and keeps each
 * reply under the case it was made for (the `caseId` every call carries in its metadata), until
 * the item's record takes them. Model content is kept only in the record, never logged.
 */
export class CallCollector extends BaseCallbackHandler {
  name = "medmmv-eval-calls";
  private readonly runs = new Map<string, { caseKey: string; agent: string }>();
  private readonly byCase = new Map<string, Entry>();

  override handleChatModelStart(_llm: unknown, _messages: BaseMessage[][], runId: string, _parentRunId?: string, _extra?: Record<string, unknown>, _tags?: string[], metadata?: Record<string, unknown>): void {
    const caseKey = str(metadata?.["caseId"]);
    if (caseKey) this.runs.set(runId, { caseKey, agent: str(metadata?.["agent"]) ?? "unknown" });
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const at = this.runs.get(runId);
    if (!at) return;
    this.runs.delete(runId);
    const gen = output.generations?.[0]?.[0] as { message?: BaseMessage; text?: string } | undefined;
    const meta = (gen?.message?.response_metadata ?? {}) as Record<string, unknown>;
    const raw = textOf(gen?.message) || (gen?.text ?? "");
    const entry = this.byCase.get(at.caseKey) ?? { calls: [], chars: 0 };
    this.byCase.set(at.caseKey, entry);
    if (entry.calls.length >= MAX_CALLS_KEPT) {
      entry.callsNotKept = (entry.callsNotKept ?? 0) + 1;
      return;
    }
    const llmOutput = (output.llmOutput ?? {}) as Record<string, unknown>;
    const room = Math.max(0, Math.min(RAW_TEXT_CAP, RECORD_TEXT_CAP - entry.chars));
    entry.chars += Math.min(raw.length, room);
    entry.calls.push({
      agent: at.agent,
      model: str(meta["model_name"]) ?? str(meta["model"]) ?? str(llmOutput["model_name"]),
      systemFingerprint: str(meta["system_fingerprint"]) ?? str(llmOutput["system_fingerprint"]),
      text: raw.slice(0, room),
      ...(raw.length > room ? { cut: raw.length - room } : {}),
    });
  }

  override handleLLMError(_err: unknown, runId: string): void {
    this.runs.delete(runId);
  }

  /** The replies made for a case so far, removed from the collector. */
  take(caseKey: string): RecordCalls {
    const entry = this.byCase.get(caseKey);
    this.byCase.delete(caseKey);
    return entry ? { calls: entry.calls, ...(entry.callsNotKept ? { callsNotKept: entry.callsNotKept } : {}) } : { calls: [] };
  }
}
