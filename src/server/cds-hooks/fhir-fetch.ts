import { PREFETCH } from "./discovery.js";
import { readCappedBody } from "../../core/net/read-capped-body.js";

export interface FetchMissingOptions {
  fhirServer: string;
  accessToken: string | undefined;
  patientId: string;
  /** MEDMMV_FHIR_SERVERS: the only servers ever contacted. */
  allowList: readonly string[];
  /** The whole fetch (every query, every page) ends by then; what has not come is not read. */
  timeoutMs?: number;
  /** The most bytes all answers together may have; an answer past what is left is refused without being read whole. */
  maxBytes?: number;
  /** Pages of one search followed through `link[next]`, at most (the first page included). */
  maxPages?: number;
}

/** A prefetch query that gave nothing usable, and why, in words that hold no patient data. */
export interface NotRead {
  key: string;
  reason: string;
  /** The whole "Not read" phrase when the key's words would mislead ("1 condition of another patient"). */
  said?: string;
}

export interface FetchedPrefetch {
  /** The prefetch values fetched, keyed like the discovery document. */
  fetched: Record<string, unknown>;
  /** Queries that failed: not in `fetched`. */
  failed: NotRead[];
  /** Searches cut at `maxPages`, or at a next page that could not be read: in `fetched`, with the pages that came. */
  truncated: NotRead[];
}

/** Is this FHIR base URL one the operator listed? Exact base match (trailing slashes aside). */
export function isAllowedFhirServer(fhirServer: string, allowList: readonly string[]): boolean {
  const base = fhirServer.replace(/\/+$/, "");
  return allowList.includes(base);
}

/**
 * A next-page link as the URL it really names, when that is under the FHIR server's base;
 * null otherwise. Compared after URL normalisation (WHATWG: `..` and `%2e%2e` segments
 * resolved, scheme and host lower-cased, default ports dropped), never as a string prefix:
 * `…/fhir/../admin` starts with the base and is not under it. What a server behind the base
 * may still read as a way out is refused, however it is encoded (the path decoded until it
 * no longer changes): encoded slashes, backslashes and dots, `;` path parameters (`..;/`,
 * `..%3b`, which Java servers strip to `..`), a percent sign surviving decoding (`%252e%252e`,
 * double encoding), NUL and other control characters (`..%00`); and credentials in the URL.
 * The URL fetched is the normalised one.
 */
export function sameFhirServer(link: string, base: string): string | null {
  let url: URL;
  let root: URL;
  try {
    url = new URL(link);
    root = new URL(`${base.replace(/\/+$/, "")}/`);
  } catch {
    return null;
  }
  if (url.username || url.password || url.protocol !== root.protocol || url.host !== root.host) return null;
  if (/%2f|%5c|%2e/i.test(url.pathname) || !plainPath(url.pathname)) return null;
  const under = url.pathname === root.pathname.slice(0, -1) || url.pathname.startsWith(root.pathname);
  return under ? url.href : null;
}

/** Whether a path, decoded as often as a chain of servers might decode it, is still the plain path it reads as. */
function plainPath(pathname: string): boolean {
  let decoded = pathname;
  for (let round = 0; round < 4; round++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return false; // a stray % a lenient server would pass through
    }
    if (next === decoded) break;
    decoded = next;
  }
  if (decoded.includes("%")) return false;
  // eslint-disable-next-line no-control-regex
  if (/[;\\\u0000-\u001f\u007f]/.test(decoded)) return false;
  return !decoded.split("/").some((segment) => segment === "." || segment === "..");
}

/** Why one query stopped; its message is what the card and the 412 say. */
class QueryFailed extends Error {}

type Json = Record<string, unknown>;

/** The `next` page of a searchset, if it names one. */
function nextLink(bundle: Json): string | null {
  const links = Array.isArray(bundle.link) ? (bundle.link as unknown[]) : [];
  for (const l of links) {
    if (l && typeof l === "object" && (l as Json).relation === "next" && typeof (l as Json).url === "string") return (l as Json).url as string;
  }
  return null;
}

/**
 * The reads of one hook call from the EHR's FHIR server (allow-listed, the EHR's token): one
 * deadline and one byte budget for all of them, no redirects, next pages only on that server.
 */
function fhirClient(o: FetchMissingOptions) {
  if (!isAllowedFhirServer(o.fhirServer, o.allowList)) throw new Error("a FHIR read was asked of a fhirServer not on the allow-list");
  const base = o.fhirServer.replace(/\/+$/, "");
  const signal = AbortSignal.timeout(o.timeoutMs ?? 10_000);
  const maxPages = o.maxPages ?? 10;
  let bytesLeft = o.maxBytes ?? 20_000_000;
  const headers = { accept: "application/fhir+json", ...(o.accessToken ? { authorization: `Bearer ${o.accessToken}` } : {}) };

  const getJson = async (url: string): Promise<Json> => {
    const res = await fetch(url, { headers, redirect: "error", signal }).catch(() => {
      throw new QueryFailed(signal.aborted ? "the FHIR server did not answer in time" : "the FHIR server could not be reached");
    });
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      const auth = res.status === 401 || res.status === 403 ? (o.accessToken ? " (the fhirAuthorization token was refused)" : " (the call sent no fhirAuthorization)") : "";
      throw new QueryFailed(`the FHIR server answered ${res.status}${auth}`);
    }
    const body = await readCappedBody(res, Math.max(0, bytesLeft)).catch(() => {
      throw new QueryFailed("the FHIR server's answer was cut off");
    });
    if (body === null) throw new QueryFailed(`the record is larger than the ${o.maxBytes ?? 20_000_000} bytes this service reads from a FHIR server`);
    bytesLeft -= body.byteLength;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      throw new QueryFailed("the FHIR server's answer is not JSON");
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed) || typeof (parsed as Json).resourceType !== "string") throw new QueryFailed("the FHIR server's answer is not a FHIR resource");
    return parsed as Json;
  };

  /**
   * A searchset with the entries of its `next` pages appended (up to maxPages in all), its links
   * dropped. A next page that cannot be read ends the search there: what came is kept, and
   * `stopped` says after how many entries and why (never the pages already read thrown away).
   */
  const withNextPages = async (key: string, first: Json): Promise<{ value: Json; truncated: boolean; stopped?: { after: number; reason: string } }> => {
    const entries: unknown[] = Array.isArray(first.entry) ? [...(first.entry as unknown[])] : [];
    let next = nextLink(first);
    let stopped: { after: number; reason: string } | undefined;
    for (let page = 1; next && page < maxPages; page++) {
      try {
        const onServer = sameFhirServer(next, base);
        if (!onServer) throw new QueryFailed(`the next page of "${key}" is not on the FHIR server`);
        const more = await getJson(onServer);
        if (more.resourceType !== "Bundle") throw new QueryFailed(`a next page of "${key}" is not a Bundle`);
        if (Array.isArray(more.entry)) entries.push(...(more.entry as unknown[]));
        next = nextLink(more);
      } catch (err) {
        if (!(err instanceof QueryFailed)) throw err;
        stopped = { after: entries.length, reason: err.message };
        break;
      }
    }
    const { link: _pages, ...bundle } = first;
    return { value: { ...bundle, entry: entries }, truncated: stopped === undefined && next !== null, ...(stopped ? { stopped } : {}) };
  };
  return { base, maxPages, getJson, withNextPages };
}

/** A prefetch searchset the EHR sent with a `next` page: its key, and how many entries came. */
export interface PagedPrefetch {
  key: string;
  bundle: Json;
  entries: number;
}

/** The prefetch values that are searchsets with a `next` link (the EHR sent only their first page). */
export function pagedPrefetch(prefetch: Record<string, unknown> | undefined): PagedPrefetch[] {
  const out: PagedPrefetch[] = [];
  for (const [key, v] of Object.entries(prefetch ?? {})) {
    if (!v || typeof v !== "object" || Array.isArray(v) || (v as Json).resourceType !== "Bundle" || !nextLink(v as Json)) continue;
    out.push({ key, bundle: v as Json, entries: Array.isArray((v as Json).entry) ? ((v as Json).entry as unknown[]).length : 0 });
  }
  return out;
}

/** What a prefetch key's first page leaves out, in the card's words. */
export function afterFirstPage(p: PagedPrefetch, why: string): NotRead {
  return { key: p.key, reason: why, said: `${p.key} after the first ${p.entries} (${why})` };
}

/**
 * The rest of each paged prefetch search, read by following its `next` links on the EHR's
 * server with its token (the same rules as fetchMissingPrefetch). A search whose pages could
 * not all be read keeps what came and is listed in `notRead`, saying after how many.
 */
export async function fetchNextPages(paged: readonly PagedPrefetch[], o: Omit<FetchMissingOptions, "patientId">): Promise<{ fetched: Record<string, unknown>; notRead: NotRead[] }> {
  const client = fhirClient({ ...o, patientId: "" });
  const out: { fetched: Record<string, unknown>; notRead: NotRead[] } = { fetched: {}, notRead: [] };
  await Promise.all(
    paged.map(async (p) => {
      const { value, truncated, stopped } = await client.withNextPages(p.key, p.bundle);
      out.fetched[p.key] = value;
      if (truncated) out.notRead.push({ key: p.key, reason: `only its first ${client.maxPages} pages were read`, said: `${p.key} after the first ${client.maxPages} pages (the EHR's search has more)` });
      if (stopped) out.notRead.push({ key: p.key, reason: `a next page could not be read: ${stopped.reason}`, said: `${p.key} after the first ${stopped.after} (a next page could not be read: ${stopped.reason})` });
    }),
  );
  return out;
}

/**
 * Fetch the prefetch the EHR did not send, from its FHIR server, with its token. Only a
 * server on the allow-list is contacted (private and loopback ones only because they are
 * listed): the caller checks, and a server not on it here is a programmer error.
 *
 * The queries run concurrently; a search's `link[next]` pages are followed, one after the
 * other, up to `maxPages`, and only while they stay on the same server (a next link
 * elsewhere is not followed: it would let an allowed server send us anywhere). Redirects
 * are refused for the same reason. One query failing does not fail the others: it is
 * listed in `failed`, and the caller decides what a missing part means.
 */
export async function fetchMissingPrefetch(keys: readonly string[], o: FetchMissingOptions): Promise<FetchedPrefetch> {
  const client = fhirClient(o);
  /** One query: its first answer, and for a searchset the entries of its next pages appended. */
  const query = async (key: string, template: string): Promise<{ value: Json; truncated: boolean; stopped?: { after: number; reason: string } }> => {
    const first = await client.getJson(`${client.base}/${template.replaceAll("{{context.patientId}}", encodeURIComponent(o.patientId))}`);
    return first.resourceType === "Bundle" ? client.withNextPages(key, first) : { value: first, truncated: false };
  };
  const maxPages = client.maxPages;
  const out: FetchedPrefetch = { fetched: {}, failed: [], truncated: [] };
  await Promise.all(
    keys.map(async (key) => {
      const template = PREFETCH[key];
      if (!template) return;
      try {
        const { value, truncated, stopped } = await query(key, template);
        out.fetched[key] = value;
        if (truncated) out.truncated.push({ key, reason: `only its first ${maxPages} pages were read` });
        if (stopped) out.truncated.push({ key, reason: `a next page could not be read: ${stopped.reason}`, said: `${key} after the first ${stopped.after} (a next page could not be read: ${stopped.reason})` });
      } catch (err) {
        if (!(err instanceof QueryFailed)) throw err;
        out.failed.push({ key, reason: err.message });
      }
    }),
  );
  // In the discovery document's order, whatever order the answers came in.
  const order = Object.keys(PREFETCH);
  const byOrder = (a: NotRead, b: NotRead) => order.indexOf(a.key) - order.indexOf(b.key);
  out.failed.sort(byOrder);
  out.truncated.sort(byOrder);
  return out;
}

/** Attachments fetched per call, at most: a report's text, not a document archive. */
const MAX_LINKED_ATTACHMENTS = 10;

/** The attachments of a report or document whose content is only a link (`url`, no `data`). */
function linkedAttachments(resource: Json): Json[] {
  const out: Json[] = [];
  const forms = resource.resourceType === "DiagnosticReport" ? resource.presentedForm : resource.resourceType === "DocumentReference" ? (Array.isArray(resource.content) ? (resource.content as Json[]).map((c) => c?.attachment) : []) : [];
  for (const a of Array.isArray(forms) ? forms : []) if (a && typeof a === "object" && typeof (a as Json).url === "string" && (a as Json).data === undefined) out.push(a as Json);
  return out;
}

/** Types the intake reads as text (fhir/bundle-to-case.ts): only those are worth fetching. */
function readableType(contentType: unknown): boolean {
  const t = typeof contentType === "string" ? contentType.split(";")[0]!.trim().toLowerCase() : "";
  return t.startsWith("text/") || t === "application/xhtml+xml";
}

/**
 * The text of reports and documents that came only as links (an Oracle radiology report's
 * `presentedForm` pointing at a Binary), read from the EHR's own FHIR server with its token:
 * each link on that server (the same rule as next pages) whose type is text is read as a
 * FHIR Binary and its `data` put in the attachment, so the intake reads the report and not its
 * title. A link elsewhere, of a type the intake does not read (a PDF), or that fails is left
 * a link (the intake lists it), and `notRead` says so for the card.
 */
export async function fetchLinkedText(entries: Array<{ resource: Json }>, o: Omit<FetchMissingOptions, "patientId">): Promise<NotRead[]> {
  const client = fhirClient({ ...o, patientId: "" });
  const wanted = entries.flatMap((e) => linkedAttachments(e.resource).map((att) => ({ e, att })));
  const notRead: NotRead[] = [];
  let taken = 0;
  await Promise.all(
    wanted.map(async ({ att }) => {
      const url = sameFhirServer(String(att.url), client.base);
      if (!url || !readableType(att.contentType) || taken >= MAX_LINKED_ATTACHMENTS) return;
      taken++;
      try {
        const binary = await client.getJson(url);
        if (binary.resourceType !== "Binary" || typeof binary.data !== "string") throw new QueryFailed("the link did not answer a Binary with data");
        att.data = binary.data;
        if (typeof binary.contentType === "string") att.contentType = binary.contentType;
      } catch (err) {
        if (!(err instanceof QueryFailed)) throw err;
        notRead.push({ key: "attachments", reason: err.message, said: `a report's text at a link (${err.message})` });
      }
    }),
  );
  return notRead;
}
