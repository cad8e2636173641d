import { MedmmvError } from "../errors.js";
import { PREFETCH } from "./discovery.js";

type Json = Record<string, unknown>;

function isResource(v: unknown): v is Json & { resourceType: string } {
  return !!v && typeof v === "object" && !Array.isArray(v) && typeof (v as Json).resourceType === "string";
}

/**
 * The prefetch of a CDS Hooks call (single resources and searchset Bundles) as one
 * collection Bundle of the patient's record, each resource once; and the prefetch keys
 * that did not come (absent or null), which may be fetched from the FHIR server.
 */
export function prefetchToBundle(prefetch: Record<string, unknown> | undefined): { bundle: Json; missing: string[] } {
  const entries: Json[] = [];
  const seen = new Set<string>();
  const add = (r: Json & { resourceType: string }) => {
    // Search warnings are not the record.
    if (r.resourceType === "OperationOutcome") return;
    const name = typeof r.id === "string" ? `${r.resourceType}/${r.id}` : null;
    if (name && seen.has(name)) return;
    if (name) seen.add(name);
    entries.push({ resource: r });
  };
  const missing: string[] = [];
  for (const key of Object.keys(PREFETCH)) {
    const v = prefetch?.[key];
    if (v === undefined || v === null) {
      missing.push(key);
      continue;
    }
    if (isResource(v) && v.resourceType === "Bundle") {
      for (const e of Array.isArray(v.entry) ? v.entry : []) if (e && typeof e === "object" && isResource((e as Json).resource)) add((e as Json).resource as Json & { resourceType: string });
    } else if (isResource(v)) add(v);
    else throw new MedmmvError("INVALID_INPUT", `prefetch.${key} must be a FHIR resource or a Bundle of them (or null when not available)`, { details: { issues: [{ path: `body.prefetch.${key}`, message: "not a FHIR resource" }] } });
  }
  return { bundle: { resourceType: "Bundle", type: "collection", entry: entries }, missing };
}
