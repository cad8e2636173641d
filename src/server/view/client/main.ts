import type { ViewLive, ViewPayload, ViewState } from "../view-payload.js";
import { append, downloadLink, h } from "./dom.js";
import { GraphView, LARGE_GRAPH_NODES } from "./graph-view.js";
import { startLive } from "./live.js";
import { renderNodePanel } from "./node-panel.js";
import { AGENT_COLORS, KIND_STYLE, RELATION_COLORS } from "./palette.js";
import { renderPathPanel, type ClaimRef } from "./path-panel.js";
import { renderDifferential } from "./differential-section.js";
import { renderCandidates, renderCase, renderHallucinations, renderHeader, renderProvenance, renderRepairs, renderStability, renderTrail, renderTurns, renderUsage } from "./sections.js";
import { renderSummary } from "./summary.js";
import { renderEvidenceChecks } from "./evidence-checks.js";

declare global {
  interface Window {
    __medmmvView?: ViewState;
  }
}

const t0 = performance.now();
const cspViolations: string[] = [];
const errors: string[] = [];
document.addEventListener("securitypolicyviolation", (e) => cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
window.addEventListener("error", (e) => errors.push(String(e.message)));

/** The page's inert JSON under `id`, or null when it has none. */
function readJson<T>(id: string): T | null {
  const el = document.getElementById(id);
  return el?.textContent ? (JSON.parse(el.textContent) as T) : null;
}

function legend(): HTMLElement {
  const group = (title: string, ...items: HTMLElement[]) => h("span", { class: "group" }, h("span", { class: "title" }, title), ...items);
  const swatch = (color: string, line = false) => {
    const s = h("span", { class: line ? "swatch line" : "swatch" });
    s.style.background = color;
    return s;
  };
  return h(
    "div",
    { class: "legend", attrs: { "data-testid": "legend" } },
    group("Source", ...Object.entries(AGENT_COLORS).map(([a, c]) => h("span", null, swatch(c), a))),
    group("Kind", ...Object.entries(KIND_STYLE).map(([k, s]) => h("span", null, h("span", { class: "shape" }, s.glyph), k))),
    group("Relation", ...Object.entries(RELATION_COLORS).map(([r, c]) => h("span", null, swatch(c, true), r)), h("span", null, "(contradicts: a dashed, thicker line)")),
    group(
      "Status",
      h("span", null, "faded = outside the selected path (or not among the evidence of the claim you clicked)"),
      h("span", null, "\u2715 in the label = retracted by a check"),
      h("span", null, "larger = in the selected path's subgraph; labels where they do not overlap, the rest on hover"),
    ),
  );
}

function timed<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void {
  return (...args: A) => {
    const t = performance.now();
    fn(...args);
    state.lastHandlerMs = performance.now() - t;
  };
}

const phases: Record<string, number> = {};
const mark = (name: string) => {
  phases[name] = Math.round(performance.now() - t0);
};

const state: { lastHandlerMs: number | null; activeClaim: string | null; ready: boolean; renderMs: number | null } = {
  lastHandlerMs: null,
  activeClaim: null,
  ready: false,
  renderMs: null,
};

function main(payload: ViewPayload): void {
  const app = document.getElementById("app");
  if (!app) return;
  app.textContent = "";
  mark("payload");
  const r = payload.result;
  document.title = `medmmv audit \u2014 ${r.caseId}`;

  for (const el of renderHeader(payload)) document.body.insertBefore(el, app);
  const mainEl = h("main");
  append(app, mainEl);
  // How sure first, then the case itself, then the graph and the path, then the checks and the rest.
  const summary = renderSummary(payload);
  summary.classList.add("wide");
  append(mainEl, summary, renderCase(payload));

  const graphSection = h("section", { class: "panel", attrs: { id: "graph-section" } }, h("h2", null, "Evidence graph"));
  const modeBtn = h("button", { attrs: { type: "button", "data-testid": "mode-toggle", "aria-pressed": "false" } });
  const search = h("input", { attrs: { type: "search", placeholder: "Search nodes by label\u2026", "aria-label": "search nodes by label", "data-testid": "search" } });
  const counts = h("span", { class: "counts", attrs: { "data-testid": "counts" } });
  const matches = h("div", { class: "matches", attrs: { "data-testid": "matches" } });
  // Served pages: the graph as files for Gephi, Cytoscape desktop or networkx.
  const downloads = h("span", { class: "downloads", attrs: { "data-testid": "downloads" } }, ...(payload.downloads ?? []).flatMap((d) => [" ", downloadLink(d.url, d.label)]));
  const container = h("div", { attrs: { id: "graph", "data-testid": "graph", role: "img", "aria-label": `Evidence graph: ${payload.graph.nodes.length} nodes, ${payload.graph.edges.length} edges; the selected path's claims and the search list the same nodes as text` } });
  const zoomIn = h("button", { attrs: { type: "button", "aria-label": "zoom in" } }, "+");
  const zoomOut = h("button", { attrs: { type: "button", "aria-label": "zoom out" } }, "\u2212");
  const zoomReset = h("button", { attrs: { type: "button", "aria-label": "fit the graph to the view" } }, "fit");
  const clearBtn = h("button", { attrs: { type: "button", "data-testid": "clear-highlight" } }, "clear highlight");
  append(
    graphSection,
    h("div", { class: "toolbar" }, modeBtn, search, zoomIn, zoomOut, zoomReset, clearBtn, counts, downloads),
    matches,
    h("div", { class: "graph-wrap" }, container),
    legend(),
  );
  const side = h("div", { class: "side" });
  const pathPanel = h("section", { class: "panel", attrs: { id: "path-panel", "data-testid": "path-panel" } });
  const nodePanel = h("section", { class: "panel", attrs: { id: "node-panel", "data-testid": "node-panel" } });
  append(side, pathPanel, nodePanel);
  // The graph beside the path (wide screens) or, narrower, held at the top while the path and a node's provenance scroll under it.
  append(mainEl, h("div", { class: "explore wide" }, graphSection, side));

  const view = new GraphView(container, payload, timed((id: string) => selectNode(id)));
  mark("graph");
  if (view.sigmaMs !== null) phases.sigmaConstructor = Math.round(view.sigmaMs);
  if (view.error) append(container, h("div", { class: "graph-error" }, `The graph could not be drawn here: ${view.error}`));

  let activeClaimEl: HTMLElement | null = null;
  const selectNode = (id: string) => {
    view.select(id);
    renderNodePanel(nodePanel, id, payload, view, timed(selectNode));
  };
  /** An evidence id clicked in a claim: its provenance, brought into view. */
  const showNode = (id: string) => {
    selectNode(id);
    nodePanel.scrollIntoView({ block: "nearest" });
  };
  const onClaim = timed((ref: ClaimRef, el: HTMLElement) => {
    activeClaimEl?.classList.remove("active");
    activeClaimEl = el;
    el.classList.add("active");
    state.activeClaim = ref.id;
    view.highlight(ref.claim.evidence);
  });
  renderPathPanel(pathPanel, r, { onClaim, onNode: timed(showNode), hasNode: (id) => view.graph.hasNode(id), labelOf: (id) => (view.graph.hasNode(id) ? String(view.graph.getNodeAttribute(id, "label")) : null) });
  renderNodePanel(nodePanel, null, payload, view, timed(selectNode));

  const showMode = () => {
    const path = view.mode === "path";
    const large = view.nodeCount > LARGE_GRAPH_NODES;
    modeBtn.textContent = path
      ? large
        ? `Showing: the selected path only, ${view.subgraphNodes.length} of ${view.nodeCount} nodes (show full graph)`
        : "Showing: selected path's subgraph (show full graph)"
      : "Showing: full graph (highlight selected path)";
    modeBtn.setAttribute("aria-pressed", String(path));
    counts.textContent = `${view.nodeCount} nodes \u00b7 ${view.edgeCount} edges \u00b7 E_p ${view.subgraphNodes.length} nodes${payload.graphIsFull ? "" : " (full graph not stored)"}`;
  };
  modeBtn.disabled = view.subgraphNodes.length === 0 || !payload.graphIsFull;
  modeBtn.addEventListener("click", timed(() => {
    view.setMode(view.mode === "path" ? "full" : "path");
    showMode();
  }));
  showMode();
  search.addEventListener("input", timed(() => {
    const found = view.search(search.value);
    matches.textContent = "";
    for (const id of found.slice(0, 25)) {
      const b = h("button", { class: "chip", attrs: { type: "button", "data-node": id } }, view.graph.getNodeAttribute(id, "label") as string);
      b.addEventListener("click", timed(() => {
        selectNode(id);
        view.focus([id]);
      }));
      append(matches, b);
    }
    if (found.length > 25) append(matches, h("span", { class: "small muted" }, `and ${found.length - 25} more`));
    if (search.value.trim() && found.length === 0) append(matches, h("span", { class: "small muted" }, "no node matches"));
  }));
  search.addEventListener("keydown", (e) => {
    const first = view.matches[0];
    if (e.key === "Enter" && first) {
      selectNode(first);
      view.focus([first]);
    }
  });
  zoomIn.addEventListener("click", () => view.zoom("in"));
  zoomOut.addEventListener("click", () => view.zoom("out"));
  zoomReset.addEventListener("click", () => view.zoom("reset"));
  clearBtn.addEventListener("click", timed(() => {
    activeClaimEl?.classList.remove("active");
    activeClaimEl = null;
    state.activeClaim = null;
    view.highlight([]);
  }));

  const hallucinations = renderHallucinations(r);
  hallucinations.classList.add("wide");
  append(
    mainEl,
    renderDifferential(r),
    renderEvidenceChecks(r),
    hallucinations,
    renderCandidates(r),
    renderRepairs(r),
    h("div", { class: "grid2 wide" }, renderStability(r), renderUsage(r), renderProvenance(r)),
    renderTurns(payload),
    renderTrail(payload),
    h("p", { class: "footer" }, `medmmv ${r.provenance.version} \u00b7 self-contained page: nothing is loaded from the network`),
  );

  mark("sections");
  window.__medmmvView = {
    phases,
    get ready() {
      return state.ready;
    },
    get renderMs() {
      return state.renderMs;
    },
    layoutMs: view.layoutMs,
    get nodeCount() {
      return view.nodeCount;
    },
    get edgeCount() {
      return view.edgeCount;
    },
    get renderedNodeCount() {
      return view.renderedNodeCount;
    },
    get renderedEdgeCount() {
      return view.renderedEdgeCount;
    },
    get highlighted() {
      return view.highlighted;
    },
    get matches() {
      return view.matches;
    },
    get selectedNode() {
      return view.selected;
    },
    get activeClaim() {
      return state.activeClaim;
    },
    get subgraphNodes() {
      return view.subgraphNodes;
    },
    get mode() {
      return view.mode;
    },
    get settled() {
      return view.settled;
    },
    graphError: view.error,
    cspViolations,
    errors,
    get lastHandlerMs() {
      return state.lastHandlerMs;
    },
    nodeClientPosition: (id: string) => view.nodeClientPosition(id),
    nodeDisplay: (id: string) => view.nodeDisplay(id),
  };

  // Ready once the first frame with the graph is on screen.
  requestAnimationFrame(() => {
    requestAnimationFrame(() => {
      state.renderMs = performance.now() - t0;
      mark("firstFrame");
      state.ready = true;
      document.body.setAttribute("data-ready", "true");
    });
  });
}

function show(payload: ViewPayload | null): void {
  try {
    if (!payload) throw new Error("the page carries no case data");
    main(payload);
  } catch (e) {
    errors.push(e instanceof Error ? e.message : String(e));
    const app = document.getElementById("app");
    if (app) app.textContent = `The audit view failed to start: ${e instanceof Error ? e.message : String(e)}`;
  }
}

// A case still running has a live page: it follows the case and becomes the audit view when it finishes.
const live = readJson<ViewLive>("medmmv-live");
const liveApp = document.getElementById("app");
if (live && liveApp) startLive(live, liveApp, show);
else show(readJson<ViewPayload>("medmmv-data"));
