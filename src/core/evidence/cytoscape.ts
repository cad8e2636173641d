import type { EvidenceGraph } from "./evidence-graph.js";
import type { EvidenceAgent, EvidenceNodeAttributes, NodeKind, Relation } from "../contracts/evidence.js";

export interface CytoscapeNodeData {
  id: string;
  label: string;
  kind: NodeKind;
  /** Open list: a stored graph may carry a category newer than NodeCategory. */
  category: EvidenceNodeAttributes["category"];
  status: "active" | "retracted";
  /** Agent of the first source; `agents` lists every agent that reported the node. */
  agent: EvidenceAgent;
  agents: EvidenceAgent[];
  sourceCount: number;
  detail?: string;
  quote?: string;
  imageId?: string;
  region?: string;
  url?: string;
  flagged?: string;
  retractedReason?: string;
}

export interface CytoscapeEdgeData {
  id: string;
  source: string;
  target: string;
  relation: Relation;
  agent: EvidenceAgent;
  url?: string;
  quote?: string;
}

export interface CytoscapeGraph {
  elements: { nodes: Array<{ data: CytoscapeNodeData }>; edges: Array<{ data: CytoscapeEdgeData }> };
}

/**
 * Cytoscape.js elements JSON for viewers. Flat `data` fields only (Cytoscape selectors cannot
 * reach into nested objects); the full source list stays in the graphology export.
 */
export function toCytoscape(graph: EvidenceGraph): CytoscapeGraph {
  const nodes = graph.nodes().map((n) => {
    const data: CytoscapeNodeData = {
      id: n.id,
      label: n.label,
      kind: n.kind,
      category: n.category,
      status: n.status,
      agent: n.source.agent,
      agents: [...new Set(n.sources.map((s) => s.agent))],
      sourceCount: n.sources.length,
    };
    const firstWith = <K extends "quote" | "imageId" | "region" | "url" | "flagged">(k: K): string | undefined =>
      n.sources.find((s) => s[k] !== undefined)?.[k];
    if (n.detail !== undefined) data.detail = n.detail;
    for (const k of ["quote", "imageId", "region", "url", "flagged"] as const) {
      const v = firstWith(k);
      if (v !== undefined) data[k] = v;
    }
    if (n.retractedReason !== undefined) data.retractedReason = n.retractedReason;
    return { data };
  });
  const edges = graph.edges().map((e) => {
    const data: CytoscapeEdgeData = {
      id: e.id,
      source: e.from,
      target: e.to,
      relation: e.relation,
      agent: e.provenance.agent,
    };
    if (e.provenance.url !== undefined) data.url = e.provenance.url;
    if (e.provenance.quote !== undefined) data.quote = e.provenance.quote;
    return { data };
  });
  return { elements: { nodes, edges } };
}
