/** docs/architecture.md#data-contracts: attributes of the evidence graph (graphology, multi, directed). */
export type NodeKind = "finding" | "knowledge" | "hypothesis";
export type NodeCategory =
  | "symptom" | "sign" | "history" | "lab" | "vital" | "medication" | "demographic"
  | "imaging" | "literature" | "diagnosis" | "other";
export type EvidenceAgent = "text-doctor" | "image-doctor" | "web-search";
export type Relation = "supports" | "contradicts" | "suggests" | "associated-with" | "explains" | "located-in";

export interface NodeSource {
  agent: EvidenceAgent;
  quote?: string;
  span?: [number, number];
  imageId?: string;
  region?: string;
  url?: string;
  title?: string;
  retrievedAt?: string;
  /** The FHIR resource a quote was read from (`Observation/bp-1`), for cases built from a FHIR Bundle. */
  resource?: string;
  /** Set when a check flagged this source (e.g. quote not found verbatim, HD flagged an image finding). */
  flagged?: string;
}

export interface EvidenceNodeAttributes {
  kind: NodeKind;
  category: NodeCategory;
  label: string;
  detail?: string;
  status: "active" | "retracted";
  /** Why the node was retracted (kept so auditors can see what was withdrawn and why). */
  retractedReason?: string;
  sources: NodeSource[];
  /** First source, kept as `source` for the docs/architecture.md#data-contracts contract. */
  source: NodeSource;
}

export interface EdgeProvenance {
  agent: EvidenceAgent;
  url?: string;
  quote?: string;
  retrievedAt?: string;
}
export interface EvidenceEdgeAttributes {
  relation: Relation;
  provenance: EdgeProvenance;
}

export interface NewEvidenceNode {
  kind: NodeKind;
  category: NodeCategory;
  label: string;
  detail?: string;
  source: NodeSource;
}
