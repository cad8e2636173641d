import { describeZodIssues } from "../../core/contracts/zod-issues.js";
import { createHash, randomBytes } from "node:crypto";
import { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import { EvidenceGraph } from "../../core/evidence/evidence-graph.js";
import { clientBundle } from "./build-client.js";
import { VIEW_CSS } from "./view-css.js";
import type { ViewCase, ViewDicomProvenance, ViewDownload, ViewGraph, ViewImage, ViewLive, ViewPayload, ViewRecord, ViewTurn } from "./view-payload.js";
import { summariseAnswer } from "./answer-state.js";

export interface CaseViewImageInput {
  id: string;
  mimeType: string;
  /** base64 bytes; an image without them is listed but not drawn. */
  data?: string;
  caption?: string;
  dicom?: ViewDicomProvenance;
}

export interface CaseViewCaseInput {
  question: string;
  notes?: string;
  options?: Record<string, string>;
  images: CaseViewImageInput[];
}

export interface CaseViewInput {
  result: DiagnosisResult;
  fullEvidenceGraph: Record<string, unknown> | null;
  /** null when only the result is known (e.g. a report made from a bare result file). */
  caseInput: CaseViewCaseInput | null;
  mode: "served" | "offline";
  /** Per-response nonce for served pages; the inline script and style also carry CSP hashes. */
  nonce?: string;
  /** Clock for the "generated at" line (tests). */
  now?: () => Date;
  /** Conversation turns on the case, in order. */
  turns?: ViewTurn[];
  /** Same-origin links to the evidence graph in analysts' formats (served pages). */
  downloads?: ViewDownload[];
  /** The stored case's submitter and card feedback (served pages). */
  record?: ViewRecord;
}

const DRAWABLE_IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const NONCE = /^[A-Za-z0-9+/_-]{16,128}={0,2}$/;

/**
 * JSON that is inert inside an HTML <script type="application/json"> element: nothing in it
 * can close the element or open a comment, whatever the case or model text holds. JSON.parse
 * reads the \u escapes back to the original characters.
 */
export function jsonForHtml(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

function cspHash(text: string): string {
  return `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
}

/**
 * The page's Content-Security-Policy: no remote sources at all; the one inline script and the
 * one inline style are allowed by hash (and by nonce when the server sends one); images only
 * as data: URIs embedded in the page. Served responses should send the same policy as a header
 * (plus `frame-ancestors 'none'`, which a <meta> policy cannot carry).
 *
 * `live`: the page of a running case, which follows the case's events and then fetches its
 * finished payload from its own origin, and nowhere else (connect-src 'self'). Every other
 * page connects nowhere. `script: false`: a page with no script at all (errors, a failed case).
 */
export function viewContentSecurityPolicy(nonce?: string, o: { live?: boolean; script?: boolean; forms?: boolean } = {}): string {
  const n = nonce ? ` 'nonce-${nonce}'` : "";
  return [
    "default-src 'none'",
    o.script === false ? "script-src 'none'" : `script-src ${cspHash(clientBundle().code)}${n}`,
    `style-src ${cspHash(VIEW_CSS)}${n}`,
    "img-src data:",
    "font-src 'none'",
    o.live ? "connect-src 'self'" : "connect-src 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    // The auditor pages' search forms submit to the page itself (GET); every other page has no form.
    o.forms ? "form-action 'self'" : "form-action 'none'",
  ].join("; ");
}

/** A fresh nonce for a served page. */
export function newViewNonce(): string {
  return randomBytes(18).toString("base64url");
}

/** notes, blank line, question: the text TextDoctor located quotes in (src/core/agents/text-doctor.ts). */
function sourceTextOf(c: CaseViewCaseInput): string {
  return [c.notes ?? "", c.question].filter(Boolean).join("\n\n");
}

function viewImage(i: CaseViewImageInput): ViewImage {
  const out: ViewImage = { id: String(i.id), mimeType: String(i.mimeType) };
  if (i.caption !== undefined) out.caption = String(i.caption);
  if (i.dicom) out.dicom = i.dicom;
  // Only bytes we know how to show become a data: URI; anything else is listed, not drawn.
  if (typeof i.data === "string" && DRAWABLE_IMAGE_TYPES.has(i.mimeType)) {
    const b64 = i.data.replace(/\s+/g, "");
    if (b64.length > 0 && b64.length % 4 === 0 && BASE64.test(b64)) out.dataUri = `data:${i.mimeType};base64,${b64}`;
  }
  return out;
}

function viewCase(c: CaseViewCaseInput | null): ViewCase | null {
  if (!c) return null;
  const out: ViewCase = {
    question: String(c.question ?? ""),
    images: (c.images ?? []).map(viewImage),
    sourceText: sourceTextOf(c),
  };
  if (c.notes !== undefined) out.notes = String(c.notes);
  if (c.options) out.options = Object.fromEntries(Object.entries(c.options).map(([k, v]) => [k, String(v)]));
  return out;
}

/** Validates the stored graph (the same rules as loading it) and returns it in a canonical order. */
function canonicalGraph(json: unknown, what: string): ViewGraph {
  try {
    const g = EvidenceGraph.import(json);
    return {
      nodes: g.nodes().map(({ id, ...attributes }) => ({ key: id, attributes })),
      edges: g.edges().map((e) => ({ key: e.id, source: e.from, target: e.to, attributes: { relation: e.relation, provenance: e.provenance } })),
    };
  } catch (e) {
    throw new MedmmvError("INVALID_INPUT", `${what} is not a valid evidence graph`, { cause: e });
  }
}

/** Builds the data the page embeds; exported so tests and the API can inspect it. */
export function buildViewPayload(input: Omit<CaseViewInput, "nonce">): ViewPayload {
  const parsed = DiagnosisResult.safeParse(input.result);
  if (!parsed.success) {
    throw new MedmmvError("INVALID_INPUT", "not a DiagnosisResult", {
      details: { issues: describeZodIssues(parsed.error, 5).issues.map((i) => `${i.path}: ${i.message}`) },
    });
  }
  const result = parsed.data;
  const sub = result.evidenceGraph ? canonicalGraph(result.evidenceGraph, "result.evidenceGraph") : null;
  const full = input.fullEvidenceGraph ? canonicalGraph(input.fullEvidenceGraph, "fullEvidenceGraph") : null;
  const graph: ViewGraph = full ?? sub ?? { nodes: [], edges: [] };
  const present = new Set(graph.nodes.map((n) => n.key));
  return {
    version: 1,
    mode: input.mode,
    generatedAt: (input.now ?? (() => new Date()))().toISOString(),
    result,
    graph,
    graphIsFull: full !== null,
    subgraphNodeIds: (sub?.nodes ?? []).map((n) => n.key).filter((k) => present.has(k)),
    caseInput: viewCase(input.caseInput),
    summary: summariseAnswer(result),
    ...(input.record ? { record: input.record } : {}),
    ...(input.downloads?.length ? { downloads: input.downloads } : {}),
    ...(input.turns?.length ? { turns: input.turns.map(({ turn, question, answer, step, category, contextConflict, evidence }) => ({ turn, question, answer, step, category, contextConflict, evidence })) } : {}),
  };
}

export function checkNonce(nonce: string | undefined): string {
  if (nonce !== undefined && !NONCE.test(nonce)) throw new MedmmvError("INVALID_INPUT", "CSP nonce must be 16-128 base64 characters");
  return nonce ? ` nonce="${nonce}"` : "";
}

/** Text as HTML text: the only way server-side data reaches markup here (the message pages). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** One page: its policy as a <meta> too (offline reports have no headers), the styles, then the body. */
export function page(o: { title: string; csp: string; nonceAttr: string; body: string[] }): string {
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${o.csp}">`,
    '<meta name="referrer" content="no-referrer">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="robots" content="noindex">',
    `<title>${escapeHtml(o.title)}</title>`,
    `<style${o.nonceAttr}>${VIEW_CSS}</style>`,
    "</head>",
    "<body>",
    ...o.body,
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

/** The page body's script part: the data as inert JSON under `id`, then the bundled client. */
function scripted(id: string, data: unknown, nonceAttr: string): string[] {
  return [
    '<div id="app"><noscript>This audit view needs JavaScript to draw the evidence graph and the reasoning.</noscript></div>',
    `<script id="${id}" type="application/json">${jsonForHtml(data)}</script>`,
    `<script${nonceAttr}>${clientBundle().code}</script>`,
  ];
}

/**
 * The audit view of one case as a single self-contained HTML document: the data as inert JSON,
 * the bundled client inline, a CSP that allows nothing remote. All case and model text reaches
 * the DOM through textContent in the client; nothing here interpolates data into markup.
 */
export function renderCaseViewHtml(input: CaseViewInput): string {
  const nonceAttr = checkNonce(input.nonce);
  const payload = buildViewPayload(input);
  return page({ title: "medmmv audit view", csp: viewContentSecurityPolicy(input.nonce), nonceAttr, body: scripted("medmmv-data", payload, nonceAttr) });
}

/**
 * The page of a case still queued or running: the same client, which shows the case's
 * events as they happen and turns into the audit view when the case finishes. Served
 * with `viewContentSecurityPolicy(nonce, { live: true })`.
 */
export function renderLiveViewHtml(live: ViewLive, nonce?: string): string {
  const nonceAttr = checkNonce(nonce);
  return page({ title: `medmmv \u2014 case ${live.caseId} in progress`, csp: viewContentSecurityPolicy(nonce, { live: true }), nonceAttr, body: scripted("medmmv-live", live, nonceAttr) });
}

/**
 * A page that says what happened, for a browser: a refused link, a missing case, a failed
 * analysis. No script; the texts are escaped. Served with `viewContentSecurityPolicy(nonce, { script: false })`.
 */
export function renderViewMessageHtml(o: { title: string; message: string; hint?: string; nonce?: string }): string {
  const nonceAttr = checkNonce(o.nonce);
  return page({
    title: `medmmv \u2014 ${o.title}`,
    csp: viewContentSecurityPolicy(o.nonce, { script: false }),
    nonceAttr,
    body: [
      '<main class="message" data-testid="message">',
      `<h1>${escapeHtml(o.title)}</h1>`,
      `<p data-testid="message-text">${escapeHtml(o.message)}</p>`,
      ...(o.hint ? [`<p class="muted">${escapeHtml(o.hint)}</p>`] : []),
      "</main>",
    ],
  });
}
