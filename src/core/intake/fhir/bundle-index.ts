import { fhirPath, type FhirIssue } from "./fhir-error.js";

/** One entry of the bundle as read: where it is, what it is, and the name its note lines use. */
export interface IndexedEntry {
  index: number;
  /** FHIRPath of the resource, for error messages: `Bundle.entry[3].resource`. */
  at: string;
  type: string;
  /** `Observation/bp-1`: the resource's literal reference, the name a note line starts with. */
  name: string;
  fullUrl?: string;
  resource: Record<string, unknown>;
}

const UUID_URN = /^urn:uuid:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
const RELATIVE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(\/_history\/[A-Za-z0-9\-.]{1,64})?$/;
const ABSOLUTE = /^https?:\/\/\S+\/([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(\/_history\/[A-Za-z0-9\-.]{1,64})?$/;

/**
 * The bundle's entries by every name a reference may use (`Type/id`, `fullUrl`), so
 * references between resources can be followed and a reference to nothing refused.
 */
export class BundleIndex {
  readonly entries: IndexedEntry[] = [];
  readonly #byName = new Map<string, IndexedEntry>();
  readonly #byFullUrl = new Map<string, IndexedEntry>();

  add(index: number, resource: Record<string, unknown>, fullUrl: string | undefined): IndexedEntry {
    const type = String(resource.resourceType);
    const id = typeof resource.id === "string" ? resource.id : (fullUrl && UUID_URN.exec(fullUrl)?.[1]) || `entry-${index}`;
    const e: IndexedEntry = { index, at: `Bundle.entry[${index}].resource`, type, name: `${type}/${id}`, resource, ...(fullUrl ? { fullUrl } : {}) };
    this.entries.push(e);
    if (!this.#byName.has(e.name)) this.#byName.set(e.name, e);
    if (fullUrl && !this.#byFullUrl.has(fullUrl)) this.#byFullUrl.set(fullUrl, e);
    return e;
  }

  /** Two entries that claim the same identity make every reference to it ambiguous. */
  duplicates(): FhirIssue[] {
    const seen = new Map<string, IndexedEntry>();
    const out: FhirIssue[] = [];
    for (const e of this.entries) {
      const first = seen.get(e.name);
      if (first) out.push({ path: fhirPath(e.at, ["id"]), message: `${e.name} appears twice (also at ${first.at}); each resource must be in the bundle once`, fhirCode: "duplicate" });
      else seen.set(e.name, e);
    }
    return out;
  }

  /**
   * The entry a reference points at. `undefined`: it points outside the bundle (an absolute
   * URL to a server, a contained `#id`), which we neither follow nor refuse; `null`: it
   * should be in the bundle and is not.
   */
  resolve(reference: string): IndexedEntry | null | undefined {
    if (reference.startsWith("#")) return undefined;
    const byUrl = this.#byFullUrl.get(reference);
    if (byUrl) return byUrl;
    if (/^urn:(uuid|oid):/i.test(reference)) return null;
    const rel = RELATIVE.exec(reference);
    if (rel) return this.#byName.get(`${rel[1]}/${rel[2]}`) ?? null;
    const abs = ABSOLUTE.exec(reference);
    if (abs) return this.#byName.get(`${abs[1]}/${abs[2]}`) ?? undefined;
    // Any other absolute URL names something outside the bundle; a bare word names nothing.
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(reference) ? undefined : null;
  }

  /**
   * Every `reference` inside a resource that should resolve within the bundle and does not.
   * Walked without recursion: resources come from the network and may nest deeply.
   */
  brokenReferences(e: IndexedEntry): FhirIssue[] {
    const out: FhirIssue[] = [];
    const stack: Array<[unknown, PropertyKey[]]> = [[e.resource, []]];
    while (stack.length) {
      const [v, path] = stack.pop()!;
      if (!v || typeof v !== "object") continue;
      if (Array.isArray(v)) {
        v.forEach((c, i) => stack.push([c, [...path, i]]));
        continue;
      }
      for (const [k, c] of Object.entries(v as Record<string, unknown>)) {
        if (k === "contained") continue;
        if (k === "reference" && typeof c === "string") {
          if (this.resolve(c) === null) {
            out.push({
              path: fhirPath(e.at, [...path, k]),
              message: `reference "${c.slice(0, 120)}" does not resolve to any entry of the bundle; include that resource, or fix the reference`,
              fhirCode: "not-found",
            });
          }
        } else stack.push([c, [...path, k]]);
      }
    }
    return out;
  }
}
