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

/**
 * How references may point outside a bundle, by Bundle.type (FHIR R4 http.html#trules and
 * bundle.html#references): a transaction or batch is a set of writes against a server, so
 * `Type/id` and conditional `Type?search` references may name what the server already
 * holds; a searchset, collection or history is a set of resources that may reference what
 * it does not contain; a document must be self-contained (bundle.html#document, "all
 * resources referenced ... SHALL be included").
 */
export type ReferenceRule = "server-writes" | "open" | "self-contained";

export function referenceRule(bundleType: string): ReferenceRule {
  if (bundleType === "document") return "self-contained";
  if (bundleType === "transaction" || bundleType === "batch") return "server-writes";
  return "open";
}

const RULE_TEXT: Record<ReferenceRule, string> = {
  "self-contained": "a document Bundle must contain every resource it references (FHIR R4 bundle.html#document)",
  "server-writes": "in a transaction or batch a urn:uuid reference must name an entry's fullUrl",
  open: "a urn:uuid reference names an entry of this bundle, by its fullUrl",
};

const UUID_URN = /^urn:uuid:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
const RELATIVE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(\/_history\/[A-Za-z0-9\-.]{1,64})?$/;
const ABSOLUTE = /^https?:\/\/\S+\/([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(\/_history\/[A-Za-z0-9\-.]{1,64})?$/;
/** `Practitioner?identifier=http://hl7.org/fhir/sid/us-npi|9999999999` (FHIR R4 http.html#trules). */
const CONDITIONAL = /^([A-Z][A-Za-z]+)\?(.+)$/;
/** Enough broken references to fix a bundle by; more would only grow the OperationOutcome. */
const MAX_BROKEN_REPORTED = 50;

/** A node of the iterative walk: the parent link lets a path be built only where it is needed. */
interface WalkNode {
  value: unknown;
  parent: WalkNode | null;
  key: PropertyKey;
}

function pathOf(n: WalkNode): PropertyKey[] {
  const out: PropertyKey[] = [];
  for (let at: WalkNode | null = n; at && at.parent; at = at.parent) out.push(at.key);
  return out.reverse();
}

/**
 * The bundle's entries by every name a reference may use (`Type/id`, `fullUrl`, and the
 * identifiers a conditional reference searches by), so references between resources can be
 * followed and, where the bundle type says so, a reference to nothing refused.
 */
export class BundleIndex {
  readonly entries: IndexedEntry[] = [];
  readonly rule: ReferenceRule;
  readonly #byName = new Map<string, IndexedEntry>();
  readonly #byFullUrl = new Map<string, IndexedEntry>();
  /** `Type|system|value` and `Type||value` → the entries carrying that identifier. */
  readonly #byIdentifier = new Map<string, IndexedEntry[]>();

  constructor(bundleType = "collection") {
    this.rule = referenceRule(bundleType);
  }

  add(index: number, resource: Record<string, unknown>, fullUrl: string | undefined): IndexedEntry {
    const type = String(resource.resourceType);
    const id = typeof resource.id === "string" ? resource.id : (fullUrl && UUID_URN.exec(fullUrl)?.[1]) || `entry-${index}`;
    const e: IndexedEntry = { index, at: `Bundle.entry[${index}].resource`, type, name: `${type}/${id}`, resource, ...(fullUrl ? { fullUrl } : {}) };
    this.entries.push(e);
    if (!this.#byName.has(e.name)) this.#byName.set(e.name, e);
    if (fullUrl && !this.#byFullUrl.has(fullUrl)) this.#byFullUrl.set(fullUrl, e);
    if (Array.isArray(resource.identifier)) {
      for (const ident of resource.identifier.slice(0, 50)) {
        if (!ident || typeof ident !== "object" || typeof (ident as { value?: unknown }).value !== "string") continue;
        const { system, value } = ident as { system?: unknown; value: string };
        for (const key of [`${type}|${typeof system === "string" ? system : ""}|${value}`, `${type}||${value}`]) {
          const list = this.#byIdentifier.get(key);
          if (list) list.length < 2 && list.push(e);
          else this.#byIdentifier.set(key, [e]);
        }
      }
    }
    return e;
  }

  /** Whether an entry already goes by this name (`Type/id`). */
  has(name: string): boolean {
    return this.#byName.has(name);
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
   * The entry a conditional reference matches: only `identifier=[system|]value` is
   * evaluated (what Synthea and EHR exports use); exactly one match resolves, otherwise the
   * reference points at the server.
   */
  #conditional(type: string, query: string): IndexedEntry | undefined {
    const params = new URLSearchParams(query);
    const ident = params.get("identifier");
    if (ident === null || [...params.keys()].length !== 1) return undefined;
    const bar = ident.indexOf("|");
    const key = bar < 0 ? `${type}||${ident}` : `${type}|${ident.slice(0, bar)}|${ident.slice(bar + 1)}`;
    const found = this.#byIdentifier.get(key);
    return found?.length === 1 ? found[0] : undefined;
  }

  /**
   * The entry a reference points at. `undefined`: it points outside the bundle (a server's
   * resource, an absolute URL, a contained `#id`), which we neither follow nor refuse;
   * `null`: the bundle type says it must be in the bundle and it is not.
   */
  resolve(reference: string): IndexedEntry | null | undefined {
    if (reference.startsWith("#")) return undefined;
    const byUrl = this.#byFullUrl.get(reference);
    if (byUrl) return byUrl;
    if (/^urn:(uuid|oid):/i.test(reference)) return null;
    const cond = CONDITIONAL.exec(reference);
    if (cond) return this.#conditional(cond[1]!, cond[2]!) ?? (this.rule === "self-contained" ? null : undefined);
    const rel = RELATIVE.exec(reference);
    if (rel) return this.#byName.get(`${rel[1]}/${rel[2]}`) ?? (this.rule === "self-contained" ? null : undefined);
    const abs = ABSOLUTE.exec(reference);
    if (abs) return this.#byName.get(`${abs[1]}/${abs[2]}`) ?? undefined;
    // Any other absolute URL names something outside the bundle; a bare word names nothing.
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(reference) ? undefined : null;
  }

  /**
   * Every `reference` inside a resource that should resolve within the bundle and does not,
   * with the rule it breaks. Walked without recursion and without copying paths (a path is
   * built only for a reference reported), so the walk is linear in the resource's size.
   */
  brokenReferences(e: IndexedEntry): FhirIssue[] {
    const out: FhirIssue[] = [];
    const stack: WalkNode[] = [{ value: e.resource, parent: null, key: "" }];
    while (stack.length) {
      const node = stack.pop()!;
      const v = node.value;
      if (!v || typeof v !== "object") continue;
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], parent: node, key: i });
        continue;
      }
      for (const k of Object.keys(v)) {
        if (k === "contained") continue;
        const c = (v as Record<string, unknown>)[k];
        if (k === "reference" && typeof c === "string") {
          if (out.length < MAX_BROKEN_REPORTED && this.resolve(c) === null) {
            out.push({
              path: fhirPath(e.at, [...pathOf(node), k]),
              message: `reference "${c.slice(0, 120)}" does not resolve: ${RULE_TEXT[this.rule]}; include that resource, or fix the reference`,
              fhirCode: "not-found",
            });
          }
        } else if (c && typeof c === "object") stack.push({ value: c, parent: node, key: k });
      }
    }
    return out;
  }
}

/**
 * The first place a value nests deeper than `limit` (objects and arrays), or null. FHIR
 * resources nest a few levels (extensions in extensions, Questionnaire items); thousands of
 * levels are an attack or a broken exporter, refused before anything else walks them.
 */
export function nestingTooDeep(value: unknown, limit: number): { path: PropertyKey[]; depth: number } | null {
  const stack: Array<WalkNode & { depth: number }> = [{ value, parent: null, key: "", depth: 0 }];
  while (stack.length) {
    const node = stack.pop()!;
    const v = node.value;
    if (!v || typeof v !== "object") continue;
    if (node.depth > limit) return { path: pathOf(node).slice(0, 12), depth: node.depth };
    const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
    const keys = Array.isArray(v) ? null : Object.keys(v as Record<string, unknown>);
    for (let i = 0; i < children.length; i++) {
      const c = children[i];
      if (c && typeof c === "object") stack.push({ value: c, parent: node, key: keys ? keys[i]! : i, depth: node.depth + 1 });
    }
  }
  return null;
}
