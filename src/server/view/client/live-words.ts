/**
 * The live page's words: each pipeline event as a sentence a clinician reads, and the stage of
 * the analysis it belongs to (the stage bar). Unknown events fall back to their short fields.
 */
type Data = Record<string, unknown>;

export const STAGES = [
  { id: "queued", label: "Waiting to start" },
  { id: "evidence", label: "Reading the case" },
  { id: "reasoning", label: "Reasoning" },
  { id: "checking", label: "Checking claims and repairing" },
  { id: "selecting", label: "Choosing the answer" },
  { id: "finished", label: "Finished" },
] as const;
export type StageId = (typeof STAGES)[number]["id"];

const STAGE_OF: Record<string, StageId> = {
  evidence: "evidence",
  rollout: "reasoning",
  "hd-verdict": "checking",
  repair: "checking",
  "path-scored": "selecting",
  scores: "selecting",
  final: "finished",
};

/** The stage an event shows the analysis is in; null when it says nothing about it. */
export function stageOf(type: string, data: Data): StageId | null {
  if (type === "status") return data.status === "queued" ? "queued" : data.status === "running" ? "evidence" : null;
  return STAGE_OF[type] ?? null;
}

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const str = (v: unknown) => (typeof v === "string" ? v : "");
const n = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;
const AGENTS: Record<string, string> = { "text-doctor": "TextDoctor (the notes)", "image-doctor": "ImageDoctor (the images)", "web-search": "the literature search" };

/** The event's own short fields, as `name value` pairs (for an event the page has no words for). */
function fields(data: Data): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(data)) {
    if (typeof v === "number") parts.push(`${k} ${Number.isInteger(v) ? v : v.toFixed(3)}`);
    else if (typeof v === "boolean") parts.push(`${k} ${v ? "yes" : "no"}`);
    else if (typeof v === "string") parts.push(`${k} ${v.length > 80 ? `${v.slice(0, 79)}\u2026` : v}`);
    if (parts.length >= 6) break;
  }
  return parts.join(" \u00b7 ");
}

/** One event in words. */
export function eventWords(type: string, data: Data): string {
  switch (type) {
    case "status":
      return data.status === "queued" ? "The case is waiting for a free worker." : data.status === "running" ? "The analysis started." : `The case is ${str(data.status)}.`;
    case "evidence":
      if (data.agent === "text-doctor") return `TextDoctor found ${n(num(data.facts), "fact")} in the notes${num(data.rejectedQuotes) ? `; ${n(num(data.rejectedQuotes), "quote")} it gave were not in the notes and were dropped` : ""}.`;
      if (data.agent === "image-doctor") return `ImageDoctor read the images: ${n(num(data.findings), "finding")}, ${n(num(data.checks), "check pass", "check passes")} on them.`;
      if (data.agent === "web-search") return `The literature search made ${n(num(data.pairs), "search", "searches")}${num(data.failed) ? ` (${num(data.failed)} failed)` : ""}.`;
      return `Evidence: ${fields(data)}.`;
    case "rollout":
      return `Run ${num(data.index) + 1} reasoned in ${n(num(data.steps), "step")} and answered ${str(data.answer) || "nothing"}.`;
    case "hd-verdict": {
      const v = (data.verdicts ?? {}) as Record<string, unknown>;
      const counts = ["supported", "unsupported", "contradicted"].filter((k) => num(v[k])).map((k) => `${num(v[k])} ${k}`).join(", ");
      return `Claims of ${str(data.pathId)} checked (attempt ${num(data.attempt)}): ${data.hallucinationDetected ? `a hallucination found (${str(data.severity).toLowerCase()} severity)` : "no hallucination found"}${counts ? `; ${counts}` : ""}.`;
    }
    case "repair":
      return `${str(data.pathId)} was repaired (repair ${num(data.repair)}); it now answers ${str(data.answer)}.`;
    case "path-scored":
      return `${str(data.pathId)} scored ${typeof data.cu === "number" ? data.cu.toFixed(2) : "\u2014"} after ${n(num(data.repairs), "repair")}.`;
    case "branch-failed":
      return `${AGENTS[str(data.branch)] ?? str(data.branch)} stopped: ${str(data.code) === "CONTENT_FILTERED" ? "the provider's content filter" : str(data.code) === "MODEL_REFUSED" ? "the model refused" : str(data.code)}${data.message ? ` \u2014 ${str(data.message).slice(0, 160)}` : ""}.`;
    case "scores":
      return "The paths were compared and the best supported one chosen.";
    case "final":
      return data.status === "failed" ? "The analysis failed." : data.status === "abstained" ? "The analysis finished without an answer (abstained)." : "The analysis finished.";
    default:
      return fields(data);
  }
}
