import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import type { NewEvidenceNode } from "../contracts/evidence.js";
import { fhirOrigin } from "../contracts/fhir-origin.js";
import { resourceAt } from "../intake/fhir/resource-lines.js";
import { callAgent, type AgentDeps } from "./agent-context.js";

export const TextDoctorOutput = z.object({
  entities: z
    .array(
      z.object({
        category: z.enum(["symptom", "sign", "history", "lab", "vital", "medication", "demographic", "imaging", "other"]).describe("Kind of clinical fact"),
        label: z.string().min(1).max(200).describe("Short normalised name of the fact"),
        detail: z.string().nullable().describe("Optional qualifier (duration, value, laterality) or null"),
        quote: z.string().min(1).describe("The exact words of the case text that state this fact, copied verbatim"),
      }),
    )
    .max(60),
});

export interface TextDoctorResult {
  nodes: NewEvidenceNode[];
  /** Entities whose quote was not found in the case text: never enter the graph. */
  rejected: Array<{ label: string; reason: string }>;
}

/**
 * Finds quotes in `text` ignoring case and whitespace differences, and returns each span in
 * the ORIGINAL text, so auditors can highlight exactly the words a fact rests on. The
 * normalised copy of the text is built once and serves every quote of the case.
 */
export function quoteLocator(text: string): (quote: string) => [number, number] | null {
  // The normalised text, with the original offset of every character of it.
  const map: number[] = [];
  let norm = "";
  let prevSpace = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (/\s/.test(ch)) {
      if (prevSpace || norm.length === 0) continue;
      norm += " ";
      map.push(i);
      prevSpace = true;
    } else {
      // Lower-casing may lengthen a character (İ → i̇): every piece maps back to it.
      const lower = ch.toLowerCase();
      norm += lower;
      for (let j = 0; j < lower.length; j++) map.push(i);
      prevSpace = false;
    }
  }
  return (quote) => {
    const q = quote.trim().replace(/\s+/g, " ").toLowerCase();
    if (q.length < 2) return null;
    const at = norm.indexOf(q);
    if (at < 0) return null;
    return [map[at]!, map[at + q.length - 1]! + 1];
  };
}

export function locateQuote(text: string, quote: string): [number, number] | null {
  return quoteLocator(text)(quote);
}

/** The text the quotes are checked against: notes, then question (spans index into this). */
export function caseSourceText(c: PreparedCase): string {
  return [c.notes ?? "", c.question].filter(Boolean).join("\n\n");
}

export async function runTextDoctor(deps: AgentDeps, ctx: CallContext, c: PreparedCase): Promise<TextDoctorResult> {
  const out = await callAgent(deps, ctx, c, {
    agent: "text-doctor",
    role: "judge",
    temperature: 0,
    schema: TextDoctorOutput,
    slots: { maxEntities: "25" },
  });
  const source = caseSourceText(c);
  const locate = quoteLocator(source);
  // Notes rendered from a FHIR Bundle name a resource on every line: a quote leads back to it.
  const fromFhir = fhirOrigin(c) !== null;
  const nodes: NewEvidenceNode[] = [];
  const rejected: TextDoctorResult["rejected"] = [];
  for (const e of out.entities) {
    const span = locate(e.quote);
    if (!span) {
      rejected.push({ label: e.label.slice(0, 200), reason: "quote not found verbatim in the case text" });
      continue;
    }
    const resource = fromFhir ? resourceAt(source, span[0]) : null;
    nodes.push({
      kind: "finding",
      category: e.category,
      label: e.label,
      detail: e.detail ?? undefined,
      source: { agent: "text-doctor", quote: source.slice(span[0], span[1]), span, ...(resource ? { resource } : {}) },
    });
  }
  return { nodes, rejected };
}
