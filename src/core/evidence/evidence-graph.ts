import { MultiDirectedGraph } from "graphology";
import { canonicalJson } from "../contracts/canonical-json.js";
import { MedmmvError } from "../contracts/errors.js";
import { edgeId, nodeId, normalizeLabel } from "./ids.js";
import {
  EvidenceAgent,
  NodeKind,
  Relation,
  SerializedEvidenceGraph,
  type EdgeProvenance,
  type EvidenceEdgeAttributes,
  type EvidenceNodeAttributes,
  type NewEvidenceNode,
  type NodeSource,
} from "../contracts/evidence.js";

export type EvidenceNode = EvidenceNodeAttributes & { id: string };
export interface EvidenceEdge {
  id: string;
  from: string;
  to: string;
  relation: Relation;
  provenance: EdgeProvenance;
}
export { SerializedEvidenceGraph };

type Inner = MultiDirectedGraph<EvidenceNodeAttributes, EvidenceEdgeAttributes>;

const AGENTS: readonly string[] = EvidenceAgent.options;
const RELATIONS: readonly string[] = Relation.options;
const KINDS: readonly string[] = NodeKind.options;

function byKey<T>(key: (t: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
}

function newInner(): Inner {
  // MultiDirectedGraph is Graph({ multi: true, type: "directed" }) (docs/architecture.md#data-contracts).
  return new MultiDirectedGraph<EvidenceNodeAttributes, EvidenceEdgeAttributes>();
}

/**
 * The evidence graph E of one case (docs/architecture.md#data-contracts). Node ids are derived from kind + normalised
 * label, so agents working in parallel name the same fact the same way and partial graphs can
 * be merged without coordination. Everything handed out is a copy: branches of the workflow
 * share graphs, and a caller mutating a returned node must not change the stored evidence.
 */
export class EvidenceGraph {
  readonly #g: Inner;

  constructor() {
    this.#g = newInner();
  }

  get order(): number {
    return this.#g.order;
  }

  get size(): number {
    return this.#g.size;
  }

  hasNode(id: string): boolean {
    return this.#g.hasNode(id);
  }

  getNode(id: string): EvidenceNode | undefined {
    if (!this.#g.hasNode(id)) return undefined;
    return { id, ...structuredClone(this.#g.getNodeAttributes(id)) };
  }

  /** All nodes, retracted included, sorted by id. */
  nodes(): EvidenceNode[] {
    return this.#g
      .mapNodes((id, attrs) => ({ id, ...structuredClone(attrs) }))
      .sort(byKey((n) => n.id));
  }

  activeNodes(): EvidenceNode[] {
    return this.nodes().filter((n) => n.status === "active");
  }

  /** Ids of the active nodes, sorted (no copies of their attributes). */
  activeNodeIds(): string[] {
    return this.#g.filterNodes((_, attrs) => attrs.status === "active").sort();
  }

  /**
   * The active nodes for reading only, sorted by id: shallow views of the stored
   * attributes instead of deep copies, for the renderers that run on every case.
   */
  readActiveNodes(): ReadonlyArray<Readonly<EvidenceNode>> {
    const out: EvidenceNode[] = [];
    this.#g.forEachNode((id, attrs) => {
      if (attrs.status === "active") out.push({ id, ...attrs });
    });
    return out.sort(byKey((n) => n.id));
  }

  /** All edges sorted by (from, to, relation, id). */
  edges(): EvidenceEdge[] {
    return this.#g
      .mapEdges((id, attrs, from, to) => ({
        id,
        from,
        to,
        relation: attrs.relation,
        provenance: structuredClone(attrs.provenance),
      }))
      .sort(byKey((e) => `${e.from}\u0000${e.to}\u0000${e.relation}\u0000${e.id}`));
  }

  /**
   * Adds a node or merges into the existing one with the same kind and normalised label: the
   * new source is appended unless an identical one is already recorded, `source` stays the
   * first source, and an empty `detail` is filled. A retracted node stays retracted: a later
   * agent repeating a fact does not undo a check that withdrew it.
   */
  addNode(n: NewEvidenceNode): string {
    if (!KINDS.includes(n.kind)) {
      throw new MedmmvError("INVALID_INPUT", `unknown evidence node kind: ${String(n.kind)}`);
    }
    if (typeof n.label !== "string") throw new MedmmvError("INVALID_INPUT", "evidence node label must be a string");
    if (!n.source || !AGENTS.includes(n.source.agent)) {
      throw new MedmmvError("INVALID_INPUT", "evidence node source needs a known agent");
    }
    const id = nodeId(n.kind, n.label);
    const source = structuredClone(n.source);
    if (!this.#g.hasNode(id)) {
      const attrs: EvidenceNodeAttributes = {
        kind: n.kind,
        category: n.category,
        label: n.label.trim(),
        status: "active",
        sources: [source],
        source: structuredClone(source),
      };
      if (n.detail !== undefined && n.detail.trim() !== "") attrs.detail = n.detail;
      this.#g.addNode(id, attrs);
      return id;
    }
    this.#mergeInto(id, n.label, [source], n.detail);
    return id;
  }

  /**
   * Adds a directed edge. Returns null when an endpoint is unknown (or for a self-loop, which
   * carries no evidence); returns the existing id when the same (from, to, relation, agent,
   * url) edge is already there.
   */
  addEdge(from: string, to: string, relation: Relation, provenance: EdgeProvenance): string | null {
    if (!RELATIONS.includes(relation)) {
      throw new MedmmvError("INVALID_INPUT", `unknown evidence relation: ${String(relation)}`);
    }
    if (!provenance || !AGENTS.includes(provenance.agent)) {
      throw new MedmmvError("INVALID_INPUT", "edge provenance needs a known agent");
    }
    if (from === to || !this.#g.hasNode(from) || !this.#g.hasNode(to)) return null;
    const id = edgeId(from, to, relation, provenance.agent, provenance.url);
    if (this.#g.hasEdge(id)) {
      const existing = this.#g.getEdgeAttributes(id);
      const same =
        this.#g.source(id) === from &&
        this.#g.target(id) === to &&
        existing.relation === relation &&
        existing.provenance.agent === provenance.agent &&
        existing.provenance.url === provenance.url;
      if (!same) throw new MedmmvError("INTERNAL", `evidence edge id collision on ${id}`);
      return id;
    }
    this.#g.addDirectedEdgeWithKey(id, from, to, { relation, provenance: structuredClone(provenance) });
    return id;
  }

  /**
   * Marks a node retracted but keeps it and its edges, so auditors see what was withdrawn and
   * why. Returns false for an unknown id. Retracting twice for different reasons keeps both.
   */
  retract(id: string, reason: string): boolean {
    if (!this.#g.hasNode(id)) return false;
    const attrs = this.#g.getNodeAttributes(id);
    const text = reason.trim() === "" ? "retracted" : reason.trim();
    const prior = attrs.retractedReason;
    attrs.status = "retracted";
    if (prior === undefined) attrs.retractedReason = text;
    else if (!prior.split("; ").includes(text)) attrs.retractedReason = `${prior}; ${text}`;
    return true;
  }

  /**
   * E_p for a path: the cited nodes, every node within `hops` steps of them (edges followed
   * in both directions, retracted nodes included so their status stays visible), and every
   * edge whose two ends are kept. Unknown ids are ignored.
   */
  supportingSubgraph(evidenceIds: Iterable<string>, opts: { hops?: number } = {}): EvidenceGraph {
    const hops = opts.hops ?? 1;
    if (!Number.isInteger(hops) || hops < 0) {
      throw new MedmmvError("INVALID_INPUT", "hops must be a non-negative integer");
    }
    const kept = new Set<string>();
    let frontier: string[] = [];
    for (const id of evidenceIds) {
      if (this.#g.hasNode(id) && !kept.has(id)) {
        kept.add(id);
        frontier.push(id);
      }
    }
    for (let step = 0; step < hops && frontier.length > 0; step++) {
      const next: string[] = [];
      for (const id of frontier) {
        this.#g.forEachNeighbor(id, (neighbour) => {
          if (!kept.has(neighbour)) {
            kept.add(neighbour);
            next.push(neighbour);
          }
        });
      }
      frontier = next;
    }
    const sub = new EvidenceGraph();
    for (const id of [...kept].sort()) sub.#g.addNode(id, structuredClone(this.#g.getNodeAttributes(id)));
    for (const e of this.edges()) {
      if (kept.has(e.from) && kept.has(e.to)) {
        sub.#g.addDirectedEdgeWithKey(e.id, e.from, e.to, { relation: e.relation, provenance: e.provenance });
      }
    }
    return sub;
  }

  /**
   * Union with another graph under the addNode/addEdge rules; a retraction in either graph
   * wins. Result depends on call order only through which source counts as "first", so the
   * workflow merges partial graphs in a fixed agent order.
   */
  merge(other: EvidenceGraph): this {
    for (const n of other.nodes()) {
      const { id, ...attrs } = n;
      if (!this.#g.hasNode(id)) {
        this.#g.addNode(id, attrs);
        continue;
      }
      this.#mergeInto(id, attrs.label, attrs.sources, attrs.detail);
      if (attrs.status === "retracted") {
        for (const reason of (attrs.retractedReason ?? "retracted").split("; ")) this.retract(id, reason);
      }
    }
    for (const e of other.edges()) this.addEdge(e.from, e.to, e.relation, e.provenance);
    return this;
  }

  /** Graphology serialized JSON, nodes and edges sorted by key so equal graphs export equal JSON. */
  export(): SerializedEvidenceGraph {
    return {
      options: { type: "directed", multi: true, allowSelfLoops: true },
      attributes: {},
      nodes: this.nodes().map(({ id, ...attributes }) => ({ key: id, attributes })),
      edges: this.#g
        .mapEdges((key, attrs, source, target) => ({ key, source, target, attributes: structuredClone(attrs) }))
        .sort(byKey((e) => e.key)),
    };
  }

  /** Rebuilds a graph from `export()` output (the stored form); malformed input is INVALID_INPUT. */
  static import(json: unknown): EvidenceGraph {
    const parsed = SerializedEvidenceGraph.safeParse(json);
    if (!parsed.success) {
      throw new MedmmvError("INVALID_INPUT", "not a serialized evidence graph", {
        details: { issues: parsed.error.issues.slice(0, 5).map((i) => `${i.path.join(".")}: ${i.message}`) },
      });
    }
    const data = parsed.data;
    if (data.options?.type !== undefined && data.options.type !== "directed") {
      throw new MedmmvError("INVALID_INPUT", "evidence graph must be directed");
    }
    const g = new EvidenceGraph();
    for (const n of data.nodes) {
      const a = n.attributes;
      const sources = a.sources && a.sources.length > 0 ? a.sources : [a.source];
      if (g.#g.hasNode(n.key)) throw new MedmmvError("INVALID_INPUT", `duplicate node ${n.key}`);
      g.#g.addNode(n.key, structuredClone({ ...a, sources }));
    }
    for (const e of data.edges) {
      if (e.undirected) throw new MedmmvError("INVALID_INPUT", "evidence graph edges must be directed");
      if (!g.#g.hasNode(e.source) || !g.#g.hasNode(e.target)) {
        throw new MedmmvError("INVALID_INPUT", `edge ${e.key ?? "?"} refers to a missing node`);
      }
      const attrs = structuredClone(e.attributes);
      // Recomputed rather than trusted, so later addEdge calls still find duplicates.
      const key = edgeId(e.source, e.target, attrs.relation, attrs.provenance.agent, attrs.provenance.url);
      if (!g.#g.hasEdge(key)) g.#g.addDirectedEdgeWithKey(key, e.source, e.target, attrs);
    }
    return g;
  }

  #mergeInto(id: string, label: string, sources: NodeSource[], detail: string | undefined): void {
    const attrs = this.#g.getNodeAttributes(id);
    if (normalizeLabel(attrs.label) !== normalizeLabel(label)) {
      throw new MedmmvError("INTERNAL", `evidence node id collision on ${id}`);
    }
    const seen = new Set(attrs.sources.map((s) => canonicalJson(s)));
    for (const s of sources) {
      const c = canonicalJson(s); // key-order-independent: "identical source" must not depend on how an agent built the object
      if (!seen.has(c)) {
        seen.add(c);
        attrs.sources.push(structuredClone(s));
      }
    }
    if ((attrs.detail === undefined || attrs.detail.trim() === "") && detail !== undefined && detail.trim() !== "") {
      attrs.detail = detail;
    }
  }
}
