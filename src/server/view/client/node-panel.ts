import type { ViewPayload } from "../view-payload.js";
import { append, clear, dataImage, externalLink, h } from "./dom.js";
import type { GraphView } from "./graph-view.js";
import { AGENT_COLORS, RELATION_COLORS, UNKNOWN_AGENT_COLOR } from "./palette.js";

type NodeAttrs = ViewPayload["graph"]["nodes"][number]["attributes"];
type Source = NodeAttrs["sources"][number];

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function squash(s: string): string {
  return s.replace(/\s+/g, " ").trim().toLowerCase();
}

/**
 * Where a TextDoctor quote sits in the case text: the stored span when it still matches the
 * quote (case and spacing aside), else the first whitespace-tolerant match, else null.
 */
export function locateQuote(text: string, source: Pick<Source, "quote" | "span">): [number, number] | null {
  const span = source.span;
  if (Array.isArray(span) && Number.isInteger(span[0]) && Number.isInteger(span[1]) && span[0] >= 0 && span[0] < span[1] && span[1] <= text.length) {
    if (!source.quote || squash(text.slice(span[0], span[1])) === squash(source.quote)) return [span[0], span[1]];
  }
  const quote = source.quote?.trim();
  if (!quote) return null;
  const words = quote.split(/\s+/).map(escapeRegExp);
  const m = new RegExp(words.join("\\s+"), "i").exec(text);
  return m ? [m.index, m.index + m[0].length] : null;
}

function caseTextWithMark(text: string, at: [number, number]): HTMLElement {
  const pre = h("pre", { class: "case-text" }, text.slice(0, at[0]), h("mark", null, text.slice(at[0], at[1])), text.slice(at[1]));
  // Scroll the quote into the box once it is laid out, without moving the page.
  requestAnimationFrame(() => {
    const mark = pre.querySelector("mark");
    if (mark) pre.scrollTop = Math.max(0, mark.offsetTop - pre.offsetTop - 40);
  });
  return pre;
}

function agentName(agent: string): HTMLElement {
  const sw = h("span", { class: "swatch" });
  sw.style.background = AGENT_COLORS[agent] ?? UNKNOWN_AGENT_COLOR;
  return h("span", { class: "agent" }, sw, agent);
}

function renderSource(s: Source, i: number, payload: ViewPayload, nodeLabel: string): HTMLElement {
  const box = h("div", { class: "source", attrs: { "data-source-agent": String(s.agent) } }, h("div", null, h("b", null, `Source ${i + 1}: `), agentName(String(s.agent))));
  if (s.flagged) append(box, h("p", { class: "warn small" }, `Flagged: ${s.flagged}`));
  if (s.quote !== undefined || s.span !== undefined) {
    append(box, h("div", { class: "small muted" }, "Quote:"), h("blockquote", { class: "quote" }, s.quote ?? ""));
    const text = payload.caseInput?.sourceText;
    const at = text ? locateQuote(text, s) : null;
    if (text && at) append(box, h("div", { class: "small muted" }, "In the case text:"), caseTextWithMark(text, at));
    else append(box, h("p", { class: "warn small" }, text ? "This quote was not found in the case text." : "The case text is not part of this view."));
  }
  // Cases from a FHIR Bundle: the record entry the quoted line was rendered from.
  if (s.resource !== undefined) append(box, h("div", { class: "small", attrs: { "data-source-resource": s.resource } }, h("b", null, "FHIR resource: "), h("span", { class: "chip" }, s.resource)));
  if (s.imageId !== undefined) {
    const image = payload.caseInput?.images.find((im) => im.id === s.imageId);
    append(box, h("div", { class: "small" }, "Image ", h("span", { class: "chip" }, s.imageId), image?.caption ? ` \u2014 ${image.caption}` : ""));
    const img = dataImage(image?.dataUri, `${s.imageId}: ${nodeLabel}`);
    if (img) append(box, img);
    else append(box, h("p", { class: "muted small" }, "The image is not embedded in this view."));
    append(box, h("div", { class: "small" }, h("b", null, "Finding: "), nodeLabel), s.region ? h("div", { class: "small" }, h("b", null, "Region: "), s.region) : null);
  }
  if (s.url !== undefined || s.title !== undefined) {
    // A passage of the local literature corpus (MEDMMV_SEARCH=local) names its corpus and record instead of a web address.
    const local = typeof s.url === "string" && s.url.startsWith("corpus://");
    append(
      box,
      s.title ? h("div", { class: "small" }, h("b", null, "Title: "), s.title) : null,
      s.url !== undefined ? h("div", { class: "small" }, h("b", null, local ? "Local corpus passage: " : "URL: "), externalLink(s.url)) : null,
      h("div", { class: "small" }, h("b", null, "Retrieved: "), s.retrievedAt ?? "unknown"),
      h("p", { class: "muted small" }, local ? "Corpus content is untrusted like web content; it was searched offline, in the store." : "Web content is untrusted; this page never fetches it."),
    );
  }
  return box;
}

/** The provenance of one evidence node: what it says, who said it, and where it came from. */
export function renderNodePanel(host: HTMLElement, id: string | null, payload: ViewPayload, view: GraphView, onNode: (id: string) => void): void {
  clear(host);
  append(host, h("h2", null, "Evidence node"));
  if (!id || !view.graph.hasNode(id)) {
    append(host, h("p", { class: "muted" }, "Select a node in the graph, a search result, or an evidence id of a claim."));
    return;
  }
  const a = view.graph.getNodeAttributes(id) as unknown as NodeAttrs;
  const retracted = a.status === "retracted";
  append(
    host,
    h("h3", { class: "node-label", attrs: { "data-node-id": id } }, a.label),
    h(
      "div",
      { class: "small" },
      h("span", { class: "badge" }, a.kind),
      " ",
      h("span", { class: "badge" }, a.category),
      " ",
      h("span", { class: `badge ${retracted ? "retracted" : "supported"}` }, a.status),
      " ",
      h("span", { class: "chip" }, id),
    ),
    a.detail ? h("p", { class: "small" }, a.detail) : null,
    retracted ? h("p", { class: "bad small" }, `Retracted: ${a.retractedReason ?? "no reason recorded"}`) : null,
    payload.subgraphNodeIds.includes(id) ? h("p", { class: "small ok" }, "Part of the selected path's supporting subgraph.") : null,
  );
  const citing: string[] = [];
  payload.result.path?.steps.forEach((s, i) => s.claims.forEach((c, j) => c.evidence.includes(id) && citing.push(`s${i + 1}c${j + 1}`)));
  if (citing.length) append(host, h("p", { class: "small" }, "Cited by claims: ", ...citing.map((c) => h("span", { class: "chip" }, c))));
  const sources = a.sources?.length ? a.sources : a.source ? [a.source] : [];
  sources.forEach((s, i) => append(host, renderSource(s, i, payload, a.label)));

  const links = h("ul", { class: "small links" });
  view.graph.forEachEdge(id, (_e, ea, source, target) => {
    const other = source === id ? target : source;
    const relation = String((ea as { relation?: string }).relation);
    const sw = h("span", { class: "swatch line" });
    sw.style.background = RELATION_COLORS[relation] ?? "#cbd5e1";
    const btn = h("button", { class: "chip", attrs: { type: "button", "data-node": other } }, view.graph.getNodeAttribute(other, "label") as string);
    btn.addEventListener("click", () => onNode(other));
    append(links, h("li", null, sw, source === id ? `${relation} \u2192 ` : `\u2190 ${relation} `, btn));
  });
  if (links.childNodes.length) append(host, h("h3", null, "Connections"), links);
}
