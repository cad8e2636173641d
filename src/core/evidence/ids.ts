import { createHash } from "node:crypto";
import { MedmmvError } from "../contracts/errors.js";
import type { NodeKind } from "../contracts/evidence.js";

const KIND_PREFIX: Record<NodeKind, string> = { finding: "f:", knowledge: "k:", hypothesis: "h:" };

// Sentence punctuation only: brackets, quotes and "%" carry meaning ("50%", "fever (39 °C)").
// NFKC has already folded full-width forms to ASCII; the CJK full stop and comma are not folded.
const TRAILING_PUNCTUATION = /[\s.,;:!?\u3002\u3001]+$/u;

/**
 * The form two agents' labels are compared in: NFKC, lower case, single spaces, no trailing
 * sentence punctuation. "Fever  for 3 days." and "fever for 3 days" become one node.
 */
export function normalizeLabel(label: string): string {
  return label.normalize("NFKC").toLowerCase().replace(/\s+/gu, " ").trim().replace(TRAILING_PUNCTUATION, "");
}

/** Deterministic node id: kind prefix + first 12 hex digits of sha256(normalised label). */
export function nodeId(kind: NodeKind, label: string): string {
  const prefix = KIND_PREFIX[kind];
  if (prefix === undefined) throw new MedmmvError("INVALID_INPUT", `unknown evidence node kind: ${String(kind)}`);
  const normalized = normalizeLabel(label);
  if (normalized === "") throw new MedmmvError("INVALID_INPUT", "evidence node label is empty after normalisation");
  return prefix + createHash("sha256").update(normalized, "utf8").digest("hex").slice(0, 12);
}

/**
 * Edge id from the fields that make two edges "the same" (from, to, relation, agent, url), so
 * the duplicate check is a key lookup and the id is stable across runs and merges.
 */
export function edgeId(from: string, to: string, relation: string, agent: string, url: string | undefined): string {
  const material = JSON.stringify([from, to, relation, agent, url ?? null]);
  return "e:" + createHash("sha256").update(material, "utf8").digest("hex").slice(0, 12);
}
