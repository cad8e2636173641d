import { fhirPath, type FhirIssue } from "./fhir-error.js";
import { FHIR_ID } from "./fhir-schemas.js";

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
  /** Why the resource's id is not a FHIR id (too long, odd characters); the entry is still read. */
  idProblem?: string;
}

/** A reference that degrades the element it is in (read by its display, or left out), with why. */
export interface DegradedReference {
  path: string;
  message: string;
}

/** What the reference rules make of one resource: references that refuse the bundle, and those that only degrade. */
export interface ReferenceFindings {
  refused: FhirIssue[];
  degraded: DegradedReference[];
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
/**
 * Ids up to 256 characters are matched, not only R4's 64: EHRs send longer ones (Epic's
 * Medication ids are 109), and nothing clinical depends on an id's length.
 */
const RELATIVE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,256})(\/_history\/[A-Za-z0-9\-.]{1,64})?$/;
const ABSOLUTE = /^https?:\/\/\S+\/([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,256})(\/_history\/[A-Za-z0-9\-.]{1,64})?$/;
/** Ids longer than this, or with characters outside R4's, are not used as names; the entry gets a positional one. */
const MAX_NAMED_ID = 256;
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
    const raw = typeof resource.id === "string" ? resource.id : undefined;
    const problem = raw === undefined ? undefined : idProblem(raw);
    // An over-long id of R4's characters still names the entry; an odd one would put its characters in the notes.
    const usable = raw !== undefined && (!problem || (/^[A-Za-z0-9\-.]+$/.test(raw) && raw.length <= MAX_NAMED_ID));
    const id = usable ? raw : (fullUrl && UUID_URN.exec(fullUrl)?.[1]) || `entry-${index}`;
    const e: IndexedEntry = { index, at: `Bundle.entry[${index}].resource`, type, name: `${type}/${id}`, resource, ...(fullUrl ? { fullUrl } : {}), ...(problem ? { idProblem: problem } : {}) };
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
   * The reference rules applied to one resource. Walked without recursion and without
   * copying paths (a path is built only for a reference reported), so the walk is linear in
   * the resource's size.
   *
   * What refuses the bundle: in a transaction or batch (and any bundle of `closed` intake) a
   * `urn:uuid` that names no entry; in a document (R4 bundle.html#document and
   * documents.html), a Composition's `subject` or `section.entry` that is not in it, and an
   * entry whose `subject`/`patient` names a patient the document does not hold. Everything
   * else that does not resolve, or is malformed, only degrades its element: the renderers
   * read it by its `display`, and the line here says so.
   */
  referenceFindings(e: IndexedEntry, hasPatient: boolean): ReferenceFindings {
    const out: ReferenceFindings = { refused: [], degraded: [] };
    const document = this.rule === "self-contained";
    const isComposition = e.type === "Composition";
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
          if (out.refused.length + out.degraded.length >= MAX_BROKEN_REPORTED) continue;
          const finding = this.#judge(c, e, pathOf(node), document, isComposition, hasPatient);
          if (finding) (finding.refuse ? out.refused : out.degraded).push(finding.issue);
        } else if (c && typeof c === "object") stack.push({ value: c, parent: node, key: k });
      }
    }
    return out;
  }

  #judge(ref: string, e: IndexedEntry, at: PropertyKey[], document: boolean, isComposition: boolean, hasPatient: boolean): { refuse: boolean; issue: FhirIssue } | null {
    const shown = `"${ref.slice(0, 120)}"`;
    const path = fhirPath(e.at, [...at, "reference"]);
    const malformed = malformedReference(ref);
    // The Composition's subject and section entries are the document's content: R4 requires them in it.
    const content = isComposition && (at[0] === "subject" || at.includes("entry"));
    const ofPatient = !isComposition && at.length === 1 && (at[0] === "subject" || at[0] === "patient");
    if (malformed) {
      if (document && content) return { refuse: true, issue: { path, message: `reference ${shown} is malformed (${malformed}); a document's Composition must reference its content (FHIR R4 bundle.html#document)`, fhirCode: "invalid" } };
      return { refuse: false, issue: { path, message: `reference ${shown} is malformed (${malformed}): read by its display`, fhirCode: "invalid" } };
    }
    if (this.resolve(ref) !== null) return null;
    if (document) {
      if (content) return { refuse: true, issue: { path, message: `reference ${shown} is not in the document: a document Bundle must contain what its Composition's subject and sections reference (FHIR R4 bundle.html#document); include that resource, or fix the reference`, fhirCode: "not-found" } };
      if (ofPatient && hasPatient) return { refuse: true, issue: { path, message: `reference ${shown} names a patient this document does not hold: every entry of a document is about its subject (FHIR R4 documents.html); a case is one patient's record`, fhirCode: "invariant" } };
      if (isComposition) return { refuse: false, issue: { path, message: `reference ${shown} is not in the document (R4 asks for the Composition's author, attester and custodian too, but nothing clinical depends on them): read by its display`, fhirCode: "not-found" } };
      return { refuse: false, issue: { path, message: `reference ${shown} is not in the document (R4 requires what the Composition references, not what its entries do): read by its display`, fhirCode: "not-found" } };
    }
    if (/^urn:(uuid|oid):/i.test(ref)) return { refuse: true, issue: { path, message: `reference ${shown} does not resolve: ${RULE_TEXT[this.rule]}; include that resource, or fix the reference`, fhirCode: "not-found" } };
    return { refuse: false, issue: { path, message: `reference ${shown} does not resolve in the bundle: read by its display`, fhirCode: "not-found" } };
  }
}

/** Why an id is not an R4 id, or undefined when it is. */
export function idProblem(id: string): string | undefined {
  if (FHIR_ID.test(id)) return undefined;
  if (/^[A-Za-z0-9\-.]+$/.test(id)) return `id is ${id.length} characters (R4 allows 64): read, and named by it`;
  return `id "${id.slice(0, 40)}${id.length > 40 ? "…" : ""}" has characters R4 does not allow in an id (letters, digits, '-', '.'): read, named by its place in the bundle`;
}

/**
 * What is wrong with the form of a reference, precisely, or null when it is one of R4's forms:
 * `Type/id` (optionally `/_history/v`), an absolute URL, `urn:uuid:`/`urn:oid:`, `#contained`,
 * or a conditional `Type?search`.
 */
export function malformedReference(ref: string): string | null {
  if (ref.startsWith("#") || CONDITIONAL.test(ref) || RELATIVE.test(ref) || ABSOLUTE.test(ref)) return null;
  if (/^urn:uuid:/i.test(ref)) return UUID_URN.test(ref) ? null : "urn:uuid: must be followed by a UUID (8-4-4-4-12 hex digits)";
  if (/^urn:oid:/i.test(ref)) return /^urn:oid:[0-2](\.(0|[1-9]\d*))+$/i.test(ref) ? null : "urn:oid: must be followed by an OID";
  const twice = /^([A-Z][A-Za-z]+)\/\1\/([^/]+)$/.exec(ref);
  if (twice) return `the resource type is written twice; R4 writes ${twice[1]}/${twice[2]!.slice(0, 64)}`;
  if (/\s/.test(ref)) return "it contains whitespace";
  const rel = /^([A-Z][A-Za-z]+)\/([^/]+)$/.exec(ref);
  if (rel) return rel[2]!.length > MAX_NAMED_ID ? `the id is over ${MAX_NAMED_ID} characters` : `the id "${rel[2]!.slice(0, 40)}" has characters R4 does not allow`;
  if (/^[a-z][a-z0-9+.-]*:/i.test(ref)) return null; // another absolute URI names something outside the bundle
  return "it is none of R4's forms: Type/id, an absolute URL, urn:uuid:, urn:oid: or #contained";
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

/** The extensions inside one resource: how many, their URLs, and the modifier extensions among them. */
export interface ExtensionsFound {
  count: number;
  urls: Set<string>;
  modifiers: string[];
}

/**
 * Extensions and modifier extensions anywhere in a resource (iterative, linear). Extensions are
 * never read, which R4 allows; a modifier extension changes what its element means
 * (R4 extensibility.html#modifierExtension), so a resource carrying one is not read at all.
 */
export function extensionsOf(resource: Record<string, unknown>, found: ExtensionsFound): string[] {
  const modifiers: string[] = [];
  const stack: unknown[] = [resource];
  while (stack.length) {
    const v = stack.pop();
    if (!v || typeof v !== "object") continue;
    if (Array.isArray(v)) {
      for (const x of v) if (x && typeof x === "object") stack.push(x);
      continue;
    }
    for (const [k, c] of Object.entries(v as Record<string, unknown>)) {
      if (k === "contained" || !c || typeof c !== "object") continue;
      if ((k === "extension" || k === "modifierExtension") && Array.isArray(c)) {
        for (const x of c) {
          const url = x && typeof x === "object" && typeof (x as { url?: unknown }).url === "string" ? (x as { url: string }).url.slice(0, 200) : "(no url)";
          if (k === "modifierExtension") modifiers.push(url);
          else {
            found.count++;
            if (found.urls.size < 50) found.urls.add(url);
          }
        }
      }
      stack.push(c);
    }
  }
  found.modifiers.push(...modifiers);
  return modifiers;
}
