import { MedmmvError } from "../../core/contracts/errors.js";
import { PREFETCH } from "./discovery.js";

type Json = Record<string, unknown>;

function isResource(v: unknown): v is Json & { resourceType: string } {
  return !!v && typeof v === "object" && !Array.isArray(v) && typeof (v as Json).resourceType === "string";
}

/**
 * The prefetch of a CDS Hooks call (single resources and searchset Bundles) as one
 * collection Bundle of the patient's record, each resource once; and the prefetch keys
 * that did not come, which may be fetched from the FHIR server. A key that is there with
 * the value `null` is not missing: CDS Hooks 2.0.1 (§prefetch) says the EHR has no data
 * for it, so there is nothing to fetch. A key that is absent is one the EHR chose not to
 * satisfy, or failed to.
 */
export function prefetchToBundle(prefetch: Record<string, unknown> | undefined): { bundle: Json; missing: string[]; origins: string[] } {
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
  for (const key of Object.keys(PREFETCH)) {
    const v = prefetch?.[key];
    if (v === null) continue;
    if (v === undefined) {
      missing.push(key);
      continue;
    }
    if (isResource(v) && v.resourceType === "Bundle") {
      (Array.isArray(v.entry) ? v.entry : []).forEach((e: unknown, i) => {
        if (e && typeof e === "object" && isResource((e as Json).resource)) add((e as Json).resource as Json & { resourceType: string }, `prefetch.${key}.entry[${i}].resource`);
      });
    } else if (isResource(v)) add(v, `prefetch.${key}`);
    else throw new MedmmvError("INVALID_INPUT", `prefetch.${key} must be a FHIR resource or a Bundle of them (or null when not available)`, { details: { issues: [{ path: `body.prefetch.${key}`, message: "not a FHIR resource" }] } });
  }
  return { bundle: { resourceType: "Bundle", type: "collection", entry: entries }, missing, origins };
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
