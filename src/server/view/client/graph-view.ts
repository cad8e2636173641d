import { MultiDirectedGraph } from "graphology";
import type { Attributes } from "graphology-types";
import Sigma from "sigma";
import { extremityArrow, layerDashed, layerFill, pathCurved, pathLine, sdfCircle, sdfDiamond, sdfSquare } from "sigma/rendering";
import type { ViewPayload } from "../view-payload.js";
import { forceLayout } from "./layout.js";
import {
  AGENT_COLORS,
  BACKGROUND_OPACITY,
  DEFAULT_KIND_STYLE,
  DIMMED_OPACITY,
  KIND_STYLE,
  RELATION_COLORS,
  RETRACTED_OPACITY,
  UNKNOWN_AGENT_COLOR,
  UNKNOWN_RELATION_COLOR,
} from "./palette.js";

type SerializedNode = ViewPayload["graph"]["nodes"][number];
type NodeAttrs = SerializedNode["attributes"] & {
  x: number;
  y: number;
  size: number;
  color: string;
  shape: string;
  displayLabel: string;
  opacity: number;
  /** In E_p, the selected path's supporting subgraph. */
  inPath: boolean;
};
type EdgeAttrs = ViewPayload["graph"]["edges"][number]["attributes"] & { color: string; size: number; inPath: boolean; gap: number };
type NodeState = { isSelected: boolean; isMatch: boolean };
/** The dashes of a `contradicts` edge (every other edge has no gap: a solid line). */
const CONTRADICTS_DASH_PX = 6;
const CONTRADICTS_GAP_PX = 4;
/** `large`: a graph with more than LARGE_GRAPH_NODES nodes, whose path mode shows the selected path alone. */
type GraphState = { pathMode: boolean; large: boolean };
/** Beyond this many nodes the whole graph is a hairball: path mode hides what is outside the selected path instead of fading it. */
export const LARGE_GRAPH_NODES = 150;
type Renderer = Sigma<NodeAttrs, EdgeAttrs, Attributes, NodeState, {}, GraphState>;

export type { GraphMode } from "../view-payload.js";
import type { GraphMode } from "../view-payload.js";

/** The agent whose colour a node wears: its first source (the one that introduced it). */
export function primaryAgent(attrs: { source?: { agent?: string }; sources?: Array<{ agent?: string }> }): string {
  return attrs.sources?.[0]?.agent ?? attrs.source?.agent ?? "unknown";
}

/**
 * The evidence graph drawn with sigma on a graphology graph built from the stored export.
 * Everything the page reports about the drawing (counts, highlighted nodes, positions) is read
 * back from these two instances, never from the payload.
 */
export class GraphView {
  readonly graph: MultiDirectedGraph<NodeAttrs, EdgeAttrs>;
  /** null when the browser cannot draw (no WebGL 2): the rest of the page still works. */
  readonly renderer: Renderer | null;
  readonly error: string | null;
  mode: GraphMode;
  readonly layoutMs: number;
  /** Time to construct the sigma renderer (programs, first processing of the graph). */
  readonly sigmaMs: number | null;
  private readonly inPath: Set<string>;
  private highlightedIds = new Set<string>();
  private matchIds = new Set<string>();
  private selectedId: string | null = null;
  /**
   * Sigma applies state and style changes on its next animation frame, so between a change and
   * that frame getNodeDisplayData still describes the previous picture. Counting changes and the
   * frames that drew them lets the page say when what it reports is what is on screen.
   */
  private changes = 0;
  private drawnChanges = 0;

  constructor(
    private readonly container: HTMLElement,
    payload: ViewPayload,
    private readonly onNodeClick: (id: string) => void,
  ) {
    this.graph = new MultiDirectedGraph<NodeAttrs, EdgeAttrs>();
    this.inPath = new Set(payload.subgraphNodeIds);
    // With only E_p to draw (no full graph stored), "path" and "full" are the same picture.
    this.mode = this.inPath.size > 0 && payload.graphIsFull ? "path" : "full";

    const t = performance.now();
    const positions = forceLayout(
      payload.graph.nodes.map((n) => ({ id: n.key, kind: n.attributes.kind })),
      payload.graph.edges.map((e) => [e.source, e.target]),
    );
    this.layoutMs = performance.now() - t;

    for (const n of payload.graph.nodes) {
      const a = n.attributes;
      const kind = KIND_STYLE[a.kind] ?? DEFAULT_KIND_STYLE;
      const retracted = a.status === "retracted";
      const p = positions.get(n.key) ?? { x: 0, y: 0 };
      this.graph.addNode(n.key, {
        ...a,
        x: p.x,
        y: p.y,
        size: kind.size,
        shape: kind.shape,
        color: AGENT_COLORS[primaryAgent(a)] ?? UNKNOWN_AGENT_COLOR,
        // Labels are drawn as glyphs on the WebGL canvas: never parsed as markup.
        displayLabel: retracted ? `\u2715 ${a.label} (retracted)` : a.label,
        opacity: retracted ? RETRACTED_OPACITY : 1,
        inPath: this.inPath.has(n.key),
      });
    }
    for (const e of payload.graph.edges) {
      if (!this.graph.hasNode(e.source) || !this.graph.hasNode(e.target)) continue;
      const attrs: EdgeAttrs = {
        ...e.attributes,
        color: RELATION_COLORS[e.attributes.relation] ?? UNKNOWN_RELATION_COLOR,
        size: e.attributes.relation === "contradicts" ? 2.5 : 1.5,
        // Contradicts is dashed as well as red (and thicker): told apart without colour.
        gap: e.attributes.relation === "contradicts" ? CONTRADICTS_GAP_PX : 0,
        inPath: this.inPath.has(e.source) && this.inPath.has(e.target),
      };
      this.graph.addDirectedEdgeWithKey(e.key, e.source, e.target, attrs);
    }

    let renderer: Renderer | null = null;
    let error: string | null = null;
    const started = performance.now();
    try {
      renderer = this.createRenderer();
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    this.renderer = renderer;
    this.error = error;
    this.sigmaMs = renderer ? performance.now() - started : null;
  }

  private createRenderer(): Renderer {
    const renderer: Renderer = new Sigma(this.graph, this.container, {
      customNodeState: { isSelected: false, isMatch: false },
      customGraphState: { pathMode: this.mode === "path", large: this.graph.order > LARGE_GRAPH_NODES },
      primitives: {
        nodes: { shapes: [sdfCircle(), sdfSquare({ cornerRadius: 0.15 }), sdfDiamond()], layers: [layerFill()] },
        edges: {
          paths: [pathLine(), pathCurved()],
          extremities: [extremityArrow()],
          layers: [layerDashed({ dashSize: { value: CONTRADICTS_DASH_PX, mode: "pixels" }, gapSize: { attribute: "gap", default: 0, mode: "pixels" }, solidExtremities: true })],
        },
      },
      styles: {
        nodes: [
          {
            x: { attribute: "x" },
            y: { attribute: "y" },
            size: { attribute: "size" },
            color: { attribute: "color" },
            shape: { attribute: "shape" },
            label: { attribute: "displayLabel" },
            opacity: { attribute: "opacity" },
            labelColor: "#1f2933",
            depth: "nodes",
            labelVisibility: "auto",
            cursor: "pointer",
          },
          {
            // Outside the selected path's E_p, in path mode: faded and unlabelled.
            when: (a, s, g) => g.pathMode && !a.inPath && !s.isHighlighted && !s.isSelected && !s.isMatch,
            then: { opacity: (a) => Math.min(a.opacity, BACKGROUND_OPACITY), labelVisibility: "hidden" },
          },
          {
            // A large graph in path mode: the selected path alone (a search match or a highlighted node still shows).
            when: (a, s, g) => g.pathMode && g.large && !a.inPath && !s.isHighlighted && !s.isSelected && !s.isMatch,
            then: { visibility: "hidden" },
          },
          {
            when: (a, _s, g) => g.pathMode && a.inPath,
            then: { size: (a) => a.size + 2 },
          },
          {
            // A small path's labels all show; a large one's go through sigma's label grid (no two overlap; the rest on hover).
            when: (a, _s, g) => g.pathMode && a.inPath && !g.large,
            then: { labelVisibility: "visible" },
          },
          {
            // A claim's evidence: everything else steps back.
            when: (_a, s, g) => g.hasHighlighted && !s.isHighlighted && !s.isSelected,
            then: { opacity: DIMMED_OPACITY, labelVisibility: "hidden" },
          },
          { whenState: "isMatch", then: { size: (a) => a.size + 4, labelVisibility: "visible", depth: "topNodes" } },
          { whenState: "isHighlighted", then: { size: (a) => a.size + 5, labelVisibility: "visible", depth: "topNodes", opacity: 1 } },
          { whenState: "isSelected", then: { size: (a) => a.size + 7, labelVisibility: "visible", depth: "topNodes", opacity: 1 } },
          { whenState: "isHovered", then: { labelVisibility: "visible", depth: "topNodes" } },
        ],
        edges: [
          {
            size: { attribute: "size" },
            color: { attribute: "color" },
            head: "arrow",
            parallelPath: "curved",
            depth: "edges",
          },
          {
            when: (a, _s, g) => g.pathMode && !a.inPath,
            then: { opacity: BACKGROUND_OPACITY },
          },
          {
            when: (a, _s, g) => g.pathMode && g.large && !a.inPath,
            then: { visibility: "hidden" },
          },
          {
            when: (_a, _s, g) => g.hasHighlighted,
            then: { opacity: 0.25 },
          },
        ],
      },
      settings: {
        gestureTarget: "graph",
        renderEdgeLabels: false,
        enableEdgeEvents: false,
        labelRenderedSizeThreshold: 4,
        // Room for the labels of nodes at the edge (drawn to their right).
        stagePadding: 60,
        // One label per grid cell, the larger node's first: labels left to sigma do not overlap.
        labelDensity: 0.8,
        labelGridCellSize: 120,
        itemSizesReference: "screen",
      },
    });
    renderer.on("clickNode", ({ node }) => this.onNodeClick(node));
    // A render applies every change made before it (styles first, then the frame).
    renderer.on("afterRender", () => {
      this.drawnChanges = this.changes;
    });
    // Each camera step moves the nodes on screen and is drawn on a later frame.
    renderer.getCamera().on("updated", () => this.changed());
    return renderer;
  }

  /** A change that sigma ignores (same state again) schedules no frame: ask for one, or settled would wait forever. */
  private changed(): void {
    this.changes++;
    this.renderer?.scheduleRender();
  }

  /**
   * True once the last change (state, mode, camera) has been drawn and no camera animation is
   * running: positions and display data read now match the screen. Always true without a renderer.
   */
  get settled(): boolean {
    const r = this.renderer;
    if (!r) return true;
    return this.drawnChanges === this.changes && !r.getCamera().isAnimating();
  }

  get nodeCount(): number {
    return this.graph.order;
  }

  get edgeCount(): number {
    return this.graph.size;
  }

  /** Nodes sigma has processed for display and is not hiding. */
  get renderedNodeCount(): number {
    const r = this.renderer;
    if (!r) return 0;
    return this.graph.filterNodes((id) => {
      const d = r.getNodeDisplayData(id);
      return d !== undefined && d.visibility !== "hidden";
    }).length;
  }

  get renderedEdgeCount(): number {
    const r = this.renderer;
    if (!r) return 0;
    return this.graph.filterEdges((id) => {
      const d = r.getEdgeDisplayData(id);
      return d !== undefined && d.visibility !== "hidden";
    }).length;
  }

  private nodesWithState(flag: "isHighlighted" | "isMatch" | "isSelected"): string[] {
    const r = this.renderer;
    if (!r) return [...(flag === "isHighlighted" ? this.highlightedIds : flag === "isMatch" ? this.matchIds : this.selectedId ? [this.selectedId] : [])].sort();
    return this.graph.filterNodes((id) => Boolean((r.getNodeState(id) as unknown as Record<string, boolean>)[flag])).sort();
  }

  get highlighted(): string[] {
    return this.nodesWithState("isHighlighted");
  }

  get matches(): string[] {
    return this.nodesWithState("isMatch");
  }

  get selected(): string | null {
    return this.nodesWithState("isSelected")[0] ?? null;
  }

  get subgraphNodes(): string[] {
    return this.graph.filterNodes((id) => this.inPath.has(id)).sort();
  }

  /** Highlights exactly these nodes (ids absent from the graph are returned, not drawn). */
  highlight(ids: string[]): { missing: string[] } {
    const present = ids.filter((id) => this.graph.hasNode(id));
    const missing = ids.filter((id) => !this.graph.hasNode(id));
    const r = this.renderer;
    if (r) {
      const previous = [...this.highlightedIds];
      if (previous.length) r.setNodesState(previous, { isHighlighted: false });
      if (present.length) r.setNodesState(present, { isHighlighted: true });
    }
    this.highlightedIds = new Set(present);
    this.changed();
    if (present.length) this.focus(present);
    return { missing };
  }

  select(id: string | null): void {
    const r = this.renderer;
    if (r && this.selectedId && this.graph.hasNode(this.selectedId)) r.setNodeState(this.selectedId, { isSelected: false });
    this.selectedId = id && this.graph.hasNode(id) ? id : null;
    if (r && this.selectedId) r.setNodeState(this.selectedId, { isSelected: true });
    this.changed();
  }

  /** Nodes whose label (or id) contains the query, case-insensitive; marks them on the graph. */
  search(query: string): string[] {
    const q = query.trim().toLowerCase();
    const found = q === "" ? [] : this.graph.filterNodes((id, a) => a.label.toLowerCase().includes(q) || id.toLowerCase() === q).sort();
    const r = this.renderer;
    if (r) {
      if (this.matchIds.size) r.setNodesState([...this.matchIds], { isMatch: false });
      if (found.length) r.setNodesState(found, { isMatch: true });
    }
    this.matchIds = new Set(found);
    this.changed();
    return found;
  }

  setMode(mode: GraphMode): void {
    this.mode = mode;
    this.renderer?.setGraphState({ pathMode: mode === "path" });
    this.changed();
  }

  /** Centres the camera on these nodes without changing the zoom much. */
  focus(ids: string[]): void {
    const r = this.renderer;
    if (!r || ids.length === 0) return;
    let x = 0;
    let y = 0;
    let n = 0;
    for (const id of ids) {
      const d = r.getNodeDisplayData(id);
      if (!d) continue;
      x += d.x;
      y += d.y;
      n++;
    }
    if (n === 0) return;
    const camera = r.getCamera();
    void camera.animate({ x: x / n, y: y / n }, { duration: 250 });
  }

  zoom(direction: "in" | "out" | "reset"): void {
    const camera = this.renderer?.getCamera();
    if (!camera) return;
    if (direction === "in") void camera.zoomIn({ duration: 200 });
    else if (direction === "out") void camera.zoomOut({ duration: 200 });
    else void camera.reset({ duration: 200 });
  }

  /** Viewport coordinates (CSS px, as mouse events use) of a node's centre, for tests that click the canvas. */
  nodeClientPosition(id: string): { x: number; y: number } | null {
    const r = this.renderer;
    if (!r || !this.graph.hasNode(id)) return null;
    const a = this.graph.getNodeAttributes(id);
    const vp = r.graphToViewport({ x: a.x, y: a.y });
    const rect = this.container.getBoundingClientRect();
    return { x: rect.left + vp.x, y: rect.top + vp.y };
  }

  /** How sigma is drawing a node right now (after styles and state), or null. */
  nodeDisplay(id: string): { color: string; shape: string | null; size: number; opacity: number; label: string | null } | null {
    const d = this.renderer?.getNodeDisplayData(id);
    if (!d) return null;
    return { color: d.color, shape: d.shape ?? null, size: d.size, opacity: d.opacity, label: d.label };
  }
}
