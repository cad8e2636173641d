import { MedmmvError } from "../../core/contracts/errors.js";
import { OTHER_PATIENT_REASON } from "../../core/intake/fhir/one-patient.js";
import { PREFETCH } from "./discovery.js";
import type { NotRead } from "./fhir-fetch.js";

type Json = Record<string, unknown>;

function isResource(v: unknown): v is Json & { resourceType: string } {
  return !!v && typeof v === "object" && !Array.isArray(v) && typeof (v as Json).resourceType === "string";
}

/** An OperationOutcome issue that says a query failed (not a search's warning or information). */
function failedIssue(i: unknown): boolean {
  return !!i && typeof i === "object" && ((i as Json).severity === "error" || (i as Json).severity === "fatal");
}

/**
 * Why the EHR could not answer a prefetch key, from the OperationOutcome it sent in its place
 * (CDS Hooks 2.0.1 §prefetch lets it): the issue's code and what it said, clipped.
 */
export function outcomeReason(outcome: Json): string {
  const issues = Array.isArray(outcome.issue) ? (outcome.issue as unknown[]) : [];
  const first = (issues.find(failedIssue) ?? issues[0]) as Json | undefined;
  const said = first ? (typeof first.diagnostics === "string" ? first.diagnostics : first.details && typeof (first.details as Json).text === "string" ? ((first.details as Json).text as string) : undefined) : undefined;
  const code = first && typeof first.code === "string" ? first.code.slice(0, 40) : undefined;
  return `the EHR answered with an OperationOutcome${code ? ` (${code}${said ? `: "${said.replace(/\s+/g, " ").trim().slice(0, 100)}"` : ""})` : ""}`;
}

/**
 * The prefetch of a CDS Hooks call (single resources and searchset Bundles) as one
 * collection Bundle of the patient's record, each resource once; and the prefetch keys
 * that did not come, which may be fetched from the FHIR server. A key that is there with
 * the value `null` is not missing: CDS Hooks 2.0.1 (§prefetch) says the EHR has no data
 * for it, so there is nothing to fetch. A key that is absent is one the EHR chose not to
 * satisfy, or failed to.
 */
export function prefetchToBundle(prefetch: Record<string, unknown> | undefined): { bundle: Json; missing: string[]; origins: string[]; notRead: NotRead[] } {
  const entries: Json[] = [];
  /** Where each entry came from in the hook request, so errors can name the prefetch element. */
  const origins: string[] = [];
  const seen = new Set<string>();
  const add = (r: Json & { resourceType: string }, origin: string) => {
    // Search warnings are not the record.
    if (r.resourceType === "OperationOutcome") return;
    const name = typeof r.id === "string" ? `${r.resourceType}/${r.id}` : null;
    if (name && seen.has(name)) return;
    if (name) seen.add(name);
    entries.push({ resource: r });
    origins.push(origin);
  };
  const missing: string[] = [];
  /** Keys the EHR answered with an OperationOutcome: it tried and failed, so they are not fetched again but said. */
  const notRead: NotRead[] = [];
  for (const key of Object.keys(PREFETCH)) {
    const v = prefetch?.[key];
    if (v === null) continue;
    if (v === undefined) {
      missing.push(key);
      continue;
    }
    if (isResource(v) && v.resourceType === "OperationOutcome") {
      notRead.push({ key, reason: outcomeReason(v) });
      continue;
    }
    if (isResource(v) && v.resourceType === "Bundle") {
      const entries = (Array.isArray(v.entry) ? v.entry : []).map((e: unknown) => (e && typeof e === "object" ? (e as Json).resource : undefined));
      const failed = entries.find((r): r is Json => isResource(r) && r.resourceType === "OperationOutcome" && Array.isArray(r.issue) && r.issue.some(failedIssue));
      // A search that failed answers with its OperationOutcome alone; one with results and a warning is read.
      if (failed && entries.every((r) => !isResource(r) || r.resourceType === "OperationOutcome")) {
        notRead.push({ key, reason: outcomeReason(failed) });
        continue;
      }
      (Array.isArray(v.entry) ? v.entry : []).forEach((e: unknown, i) => {
        if (e && typeof e === "object" && isResource((e as Json).resource)) add((e as Json).resource as Json & { resourceType: string }, `prefetch.${key}.entry[${i}].resource`);
      });
    } else if (isResource(v)) add(v, `prefetch.${key}`);
    else throw new MedmmvError("INVALID_INPUT", `prefetch.${key} must be a FHIR resource or a Bundle of them (or null when not available)`, { details: { issues: [{ path: `body.prefetch.${key}`, message: "not a FHIR resource" }] } });
  }
  return { bundle: { resourceType: "Bundle", type: "collection", entry: entries }, missing, origins, notRead };
}

/** A refusal of the assembled bundle, its element paths put back in terms of the hook request's prefetch. */
export function inPrefetchTerms(err: unknown, origins: readonly string[]): unknown {
  if (!(err instanceof MedmmvError) || !Array.isArray(err.details?.issues)) return err;
  const issues = (err.details.issues as Array<{ path: string; message: string }>).map((i) => {
    const m = /^Bundle\.entry\[(\d+)\]\.resource/.exec(i.path);
    const origin = m ? origins[Number(m[1])] : undefined;
    return origin ? { ...i, path: `body.${origin}${i.path.slice(m![0].length)}` } : i;
  });
  return new MedmmvError(err.code, `the prefetch was refused: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, { details: { ...err.details, issues } });
}

/** How withNotRead words a prefetch key it lists (notReadOfResult reads it back). */
const NOT_READ = "not read: ";

/**
 * The prefetch keys not read, put at the head of the case's ignored resources (its
 * provenance): the result says what the analysis did not see, as the card does.
 */
export function withNotRead(c: { metadata?: Record<string, unknown> | undefined }, notRead: readonly NotRead[]): void {
  const fhir = c.metadata?.fhir as { ignoredResources?: Array<{ resource: string; reason: string }> } | undefined;
  if (!fhir || !notRead.length) return;
  fhir.ignoredResources = [...notRead.map((n) => ({ resource: `prefetch.${n.key}`, reason: `${NOT_READ}${n.reason}` })), ...(fhir.ignoredResources ?? [])];
}

/** The prefetch key each resource type is asked for by, and what a clinician calls one. */
const TYPE_WORDS: Record<string, { key: string; one: string; many: string }> = {
  Condition: { key: "conditions", one: "condition", many: "conditions" },
  Observation: { key: "observations", one: "observation", many: "observations" },
  MedicationStatement: { key: "medicationStatements", one: "medication statement", many: "medication statements" },
  MedicationRequest: { key: "medicationRequests", one: "prescription", many: "prescriptions" },
  AllergyIntolerance: { key: "allergies", one: "allergy", many: "allergies" },
};

/**
 * The resources of another patient the prefetch held, as "Not read" lines of the card
 * ("1 condition of another patient"): counted per type from the case's ignored resources,
 * never naming the other patient.
 */
export function otherPatientNotRead(c: { metadata?: Record<string, unknown> | undefined }): NotRead[] {
  const fhir = c.metadata?.fhir as { ignoredResources?: Array<{ resource: string; reason: string }> } | undefined;
  return otherPatientLines(fhir?.ignoredResources ?? []);
}

/**
 * What the card of a stored result said was not read, from the result's own ignored resources
 * (withNotRead's prefetch keys, and another patient's resources): the feedback on a card and
 * the audit view's header judge the answer on the same record the card did.
 */
export function notReadOfResult(ignored: ReadonlyArray<{ resource: string; reason: string }>): NotRead[] {
  const prefetch = ignored.filter((i) => i.resource.startsWith("prefetch.") && i.reason.startsWith(NOT_READ)).map((i) => ({ key: i.resource.slice("prefetch.".length), reason: i.reason.slice(NOT_READ.length) }));
  return [...prefetch, ...otherPatientLines(ignored)];
}

function otherPatientLines(ignored: ReadonlyArray<{ resource: string; reason: string }>): NotRead[] {
  const counts = new Map<string, number>();
  for (const i of ignored) {
    if (i.reason !== OTHER_PATIENT_REASON) continue;
    const type = i.resource.split(/[/ ]/)[0]!;
    counts.set(type, (counts.get(type) ?? 0) + 1);
  }
  return [...counts].map(([type, n]) => {
    const w = TYPE_WORDS[type] ?? { key: type, one: `${type} resource`, many: `${type} resources` };
    return { key: w.key, reason: "of another patient", said: `${n} ${n === 1 ? w.one : w.many} of another patient` };
  });
}
