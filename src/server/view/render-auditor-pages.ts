/**
 * The auditor pages as server-rendered HTML: no script at all (CSP script-src 'none'), every
 * datum escaped on its way into the markup, forms that submit to the page itself (GET). The
 * tenant's cases (search), a case's trail, the tenant's trail by date and actor with its exports.
 */
import type { CaseSummary } from "../store/case-store.js";
import { checkNonce, escapeHtml, page, viewContentSecurityPolicy } from "./render-view.js";
import type { TrailRow } from "./trail-words.js";

/** A link to an auditor page: the path, its query (the page's token among it), escaped for an attribute. */
export function pageHref(path: string, query: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  return escapeHtml(`${path}${s ? `?${s}` : ""}`);
}

const e = escapeHtml;

function nav(token: string | undefined, here: string): string {
  const link = (path: string, label: string) => (path === here ? `<a href="${pageHref(path, { token })}" aria-current="page">${label}</a>` : `<a href="${pageHref(path, { token })}">${label}</a>`);
  return `<nav class="auditor-nav" aria-label="auditor pages">${link("/audit", "Cases")} · ${link("/audit/trail", "Access trail")}</nav>`;
}

export interface FormField {
  name: string;
  label: string;
  value: string;
  /** Choices of a select; a text (or date) input without. */
  options?: Array<[string, string]>;
  type?: "text" | "date" | "number";
}

function form(action: string, token: string | undefined, fields: FormField[], submit: string): string {
  const input = (f: FormField) => {
    const id = `f-${f.name}`;
    const control = f.options
      ? `<select id="${id}" name="${e(f.name)}">${f.options.map(([v, l]) => `<option value="${e(v)}"${v === f.value ? " selected" : ""}>${e(l)}</option>`).join("")}</select>`
      : `<input id="${id}" name="${e(f.name)}" type="${f.type ?? "text"}" value="${e(f.value)}">`;
    return `<div class="field"><label for="${id}">${e(f.label)}</label>${control}</div>`;
  };
  return [
    `<form class="filters" method="get" action="${e(action)}">`,
    ...(token ? [`<input type="hidden" name="token" value="${e(token)}">`] : []),
    ...fields.map(input),
    `<div class="field"><button type="submit">${e(submit)}</button></div>`,
    "</form>",
  ].join("\n");
}

function table(caption: string, headers: string[], rows: string[][], testid: string): string {
  if (!rows.length) return `<p class="muted" data-testid="${testid}-empty">Nothing matches.</p>`;
  return [
    `<div class="table-scroll" role="region" aria-label="${e(caption)}" tabindex="0"><table data-testid="${testid}">`,
    `<caption class="visually-hidden">${e(caption)}</caption>`,
    `<thead><tr>${headers.map((h) => `<th scope="col">${e(h)}</th>`).join("")}</tr></thead>`,
    `<tbody>${rows.map((r) => `<tr>${r.join("")}</tr>`).join("")}</tbody>`,
    "</table></div>",
  ].join("\n");
}

const td = (text: string) => `<td>${e(text)}</td>`;

function shell(title: string, nonce: string, body: string[]): string {
  return page({
    title: `medmmv \u2014 ${title}`,
    csp: viewContentSecurityPolicy(nonce, { script: false, forms: true }),
    nonceAttr: checkNonce(nonce),
    body: ['<main class="auditor">', ...body, "</main>"],
  });
}

export interface CasesPage {
  token?: string;
  nonce: string;
  fields: FormField[];
  items: CaseSummary[];
  /** The next page's query, when there is one. */
  next: Record<string, string> | null;
}

export function renderAuditorCasesPage(p: CasesPage): string {
  const rows = p.items.map((c) => [
    `<td><a href="${pageHref(`/audit/cases/${encodeURIComponent(c.id)}`, { token: p.token })}">${e(c.id)}</a></td>`,
    td(c.createdAt),
    td(c.submittedBy || "\u2014"),
    td(c.status),
    td(c.answer ? `${c.answer.option ? `(${c.answer.option}) ` : ""}${c.answer.text}` : "\u2014"),
    td(c.unsupportedClaims === null || c.unsupportedClaims === undefined ? "\u2014" : String(c.unsupportedClaims)),
    td(c.filteredOrRefused ? "yes" : c.filteredOrRefused === false ? "no" : "\u2014"),
    td(c.feedback ?? "\u2014"),
  ]);
  return shell("cases", p.nonce, [
    nav(p.token, "/audit"),
    "<h1>The team's cases</h1>",
    '<p class="muted">Newest first. Each case links to its access trail, which links to its audit view.</p>',
    form("/audit", p.token, p.fields, "Search"),
    table("cases found", ["case", "created", "submitted by", "status", "answer", "unsupported claims", "filtered or refused", "card feedback"], rows, "cases"),
    ...(p.next ? [`<p><a rel="next" href="${pageHref("/audit", { ...p.next, token: p.token })}">Next page</a></p>`] : []),
  ]);
}

export interface TrailPage {
  token?: string;
  nonce: string;
  title: string;
  intro: string;
  path: string;
  fields: FormField[] | null;
  rows: TrailRow[];
  /** The next page's query, when there is one. */
  next: Record<string, string> | null;
  /** Downloads of the same selection (CSV, FHIR NDJSON). */
  exports: Array<{ label: string; href: string }>;
  /** Extra lines at the top (a case's audit view link, its feedback). */
  extra?: string[];
}

export function renderAuditorTrailPage(p: TrailPage): string {
  const rows = p.rows.map((r) => [td(r.at), td(r.who), td(r.what), r.caseId ? `<td><a href="${pageHref(`/audit/cases/${encodeURIComponent(r.caseId)}`, { token: p.token })}">${e(r.caseId)}</a></td>` : td("\u2014"), td(r.from || "\u2014"), td(r.outcome)]);
  return shell(p.title, p.nonce, [
    nav(p.token, p.path),
    `<h1>${e(p.title)}</h1>`,
    `<p class="muted">${e(p.intro)}</p>`,
    ...(p.extra ?? []),
    ...(p.fields ? [form(p.path, p.token, p.fields, "Show")] : []),
    p.exports.length ? `<p class="exports">Download: ${p.exports.map((x) => `<a href="${x.href}" download>${e(x.label)}</a>`).join(" · ")}</p>` : "",
    table("access trail", ["when", "who", "what", "case", "from", "outcome"], rows, "trail"),
    ...(p.next ? [`<p><a rel="next" href="${pageHref(p.path, { ...p.next, token: p.token })}">Next page</a></p>`] : []),
  ]);
}
