import { createHash } from "node:crypto";
import type { Bundle, ClinicalImpression, Condition, ClinicalImpressionFinding, Provenance, ProvenanceAgent, ProvenanceEntity } from "fhir/r4.js";
import { canonicalJson } from "../../contracts/canonical-json.js";
import type { EvidenceNodeAttributes } from "../../contracts/evidence.js";
import type { DiagnosisResult } from "../../contracts/diagnosis-result.js";
import type { ClinicalCase } from "../../contracts/clinical-case.js";
import { fhirOrigin } from "../../contracts/fhir-origin.js";

/** A stable UUID per (case, resource), so exporting a case twice gives the same bundle. */
function stableUuid(...parts: string[]): string {
  const h = createHash("sha256").update(parts.join("\u0000")).digest("hex");
  // Version-4/variant-1 layout, so consumers that check UUID syntax accept it.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

interface GraphExport {
  nodes?: Array<{ key: string; attributes: EvidenceNodeAttributes }>;
}

/** Findings of the evidence graph that a supported claim of the selected path rests on. */
function supportedFindings(result: DiagnosisResult, pseudonyms: Record<string, string>): ClinicalImpressionFinding[] {
  const cited = new Set(result.path?.steps.flatMap((s) => s.claims.filter((c) => c.verdict === "supported").flatMap((c) => c.evidence)) ?? []);
  const nodes = (result.evidenceGraph as GraphExport | null)?.nodes ?? [];
  return nodes
    .filter((n) => cited.has(n.key) && n.attributes.kind === "finding" && n.attributes.status === "active")
    .map((n) => {
      const sources = n.attributes.sources?.length ? n.attributes.sources : [n.attributes.source];
      // The notes name the patient by a pseudonym where its id is an MRN; the EHR gets its own reference back.
      const cited = sources.find((s) => s.resource)?.resource;
      const resource = cited === undefined ? undefined : (pseudonyms[cited] ?? cited);
      const quote = sources.find((s) => s.quote)?.quote;
      const basis = [quote ? `"${quote}"` : undefined, n.attributes.detail, `evidence node ${n.key}`].filter(Boolean).join("; ");
      return {
        itemCodeableConcept: { text: n.attributes.label },
        ...(resource ? { itemReference: { reference: resource } } : {}),
        basis,
      };
    });
}

/** The case's answer, how well it is supported, and why it abstained, as annotations. */
function notes(result: DiagnosisResult): NonNullable<ClinicalImpression["note"]> {
  const out: NonNullable<ClinicalImpression["note"]> = [];
  out.push({ text: `medmmv status: ${result.status}` });
  if (result.answerSupport !== null) out.push({ text: `answerSupport: ${result.answerSupport.toFixed(3)} (share of the final paths' CU score behind this answer)` });
  if (result.abstentionReason) out.push({ text: `abstention: ${result.abstentionReason}` });
  if (result.error) out.push({ text: `failure: ${result.error.code}: ${result.error.message}` });
  if (result.path) out.push({ text: `reasoning: ${result.path.summary}` });
  out.push({ text: result.disclaimer });
  return out;
}

/**
 * The ranked differential as Conditions (docs/api.md#details): the leading diagnosis
 * "provisional", the others "differential" (R4 condition-ver-status), each naming its rank,
 * the runs that gave it and its best path's CU, its code only when a terminology server
 * returned one, and the impression it came from as its evidence.
 */
function differentialConditions(c: ExportableCase, subject: ClinicalImpression["subject"], impressionId: string): Condition[] {
  const r = c.result;
  return (r.differential ?? []).map((d) => ({
    resourceType: "Condition",
    id: stableUuid(c.id, `Condition-${d.rank}`),
    identifier: [{ system: "urn:medmmv:differential", value: `${c.id}#${d.rank}` }],
    verificationStatus: {
      coding: [{ system: "http://terminology.hl7.org/CodeSystem/condition-ver-status", code: d.rank === 1 ? "provisional" : "differential", display: d.rank === 1 ? "Provisional" : "Differential" }],
    },
    code: { text: d.answer.text, ...(d.code ? { coding: [{ system: d.code.system, code: d.code.code, display: d.code.display }] } : {}) },
    subject,
    recordedDate: r.provenance.finishedAt,
    evidence: [{ detail: [{ reference: `urn:uuid:${impressionId}` }] }],
    note: [{ text: `differential rank ${d.rank}: ${d.rollouts} of ${d.of} runs${d.bestCu !== null ? `; best path CU ${d.bestCu.toFixed(3)}` : ""}${d.wordings.length > 1 ? `; also worded ${d.wordings.filter((w) => w !== d.answer.text).join("; ")}` : ""}` }],
  }));
}

export interface ExportableCase {
  id: string;
  input: Pick<ClinicalCase, "question" | "metadata">;
  result: DiagnosisResult;
}

/**
 * A finished case as FHIR R4: a collection Bundle with the ClinicalImpression (answer,
 * supported findings, support and abstention), the Provenance of that impression
 * (models by role, prompt hashes, configuration, when it was recorded), and the ranked
 * differential as Conditions.
 */
export function resultToFhirBundle(c: ExportableCase): Bundle<ClinicalImpression | Provenance | Condition> {
  const r = c.result;
  const origin = fhirOrigin(c.input);
  const impressionId = stableUuid(c.id, "ClinicalImpression");
  const provenanceId = stableUuid(c.id, "Provenance");
  const answer = r.answer ? `${r.answer.option ? `(${r.answer.option}) ` : ""}${r.answer.text}` : undefined;

  const impression: ClinicalImpression = {
    resourceType: "ClinicalImpression",
    id: impressionId,
    identifier: [{ system: "urn:medmmv:case", value: c.id }],
    status: "completed",
    code: { text: "medmmv verifiable clinical reasoning" },
    description: c.input.question,
    // A case sent as ClinicalCase JSON names no Patient resource: say so rather than invent one.
    // The case names the patient by a pseudonym; the EHR gets its own reference back.
    subject: origin?.patient ? { reference: origin.pseudonyms?.[origin.patient] ?? origin.patient } : { display: `the patient of medmmv case ${c.id} (no FHIR Patient given)` },
    effectivePeriod: { start: r.provenance.startedAt, end: r.provenance.finishedAt },
    date: r.provenance.finishedAt,
    ...(answer ? { summary: answer } : {}),
    ...(() => {
      const finding = supportedFindings(r, origin?.pseudonyms ?? {});
      return finding.length ? { finding } : {};
    })(),
    note: notes(r),
  };

  const agents: ProvenanceAgent[] = [
    {
      type: { coding: [{ system: "http://terminology.hl7.org/CodeSystem/provenance-participant-type", code: "assembler", display: "Assembler" }] },
      who: { display: `medmmv ${r.provenance.version}` },
    },
    ...Object.entries(r.provenance.models).map(([role, model]) => ({
      type: { coding: [{ system: "http://terminology.hl7.org/CodeSystem/provenance-participant-type", code: "performer", display: "Performer" }] },
      role: [{ text: role }],
      who: { display: `${model} (${role})` },
    })),
  ];
  const entities: ProvenanceEntity[] = [
    ...Object.entries(r.provenance.prompts).map(([name, hash]) => ({
      role: "source" as const,
      what: { identifier: { system: `urn:medmmv:prompt:${name}`, value: hash }, display: `prompt template ${name}` },
    })),
    { role: "source", what: { identifier: { system: "urn:medmmv:config", value: canonicalJson(r.provenance.config) }, display: "pipeline configuration" } },
    ...(origin?.bundleId ? [{ role: "source" as const, what: { reference: `Bundle/${origin.bundleId}`, display: "the FHIR Bundle the case was built from" } }] : []),
  ];
  const provenance: Provenance = {
    resourceType: "Provenance",
    id: provenanceId,
    target: [{ reference: `urn:uuid:${impressionId}` }],
    occurredPeriod: { start: r.provenance.startedAt, end: r.provenance.finishedAt },
    recorded: r.provenance.finishedAt,
    activity: { coding: [{ system: "http://terminology.hl7.org/CodeSystem/v3-DataOperation", code: "CREATE", display: "create" }] },
    agent: agents,
    entity: entities,
  };

  const conditions = differentialConditions(c, impression.subject, impressionId);
  return {
    resourceType: "Bundle",
    id: stableUuid(c.id, "Bundle"),
    type: "collection",
    timestamp: r.provenance.finishedAt,
    entry: [
      { fullUrl: `urn:uuid:${impressionId}`, resource: impression },
      { fullUrl: `urn:uuid:${provenanceId}`, resource: provenance },
      ...conditions.map((resource) => ({ fullUrl: `urn:uuid:${resource.id}`, resource })),
    ],
  };
}
