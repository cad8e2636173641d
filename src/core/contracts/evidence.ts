import { z } from "zod";

/**
 * docs/architecture.md#data-contracts: attributes of the evidence graph (graphology, multi, directed),
 * written once as zod so the stored/served form is checked by the same definition the code is typed by.
 * Objects are loose: a stored graph keeps any attribute a newer writer added instead of losing it on import.
 */
export const NodeKind = z.enum(["finding", "knowledge", "hypothesis"]);
export type NodeKind = z.infer<typeof NodeKind>;
/** The categories agents write; the stored form accepts any non-empty one (see EvidenceNodeAttributes). */
export const NodeCategory = z.enum([
  "symptom", "sign", "history", "lab", "vital", "medication", "demographic",
  "imaging", "literature", "diagnosis", "other",
]);
export type NodeCategory = z.infer<typeof NodeCategory>;
export const EvidenceAgent = z.enum(["text-doctor", "image-doctor", "web-search"]);
export type EvidenceAgent = z.infer<typeof EvidenceAgent>;
export const Relation = z.enum(["supports", "contradicts", "suggests", "associated-with", "explains", "located-in"]);
export type Relation = z.infer<typeof Relation>;
export const NodeStatus = z.enum(["active", "retracted"]);
export type NodeStatus = z.infer<typeof NodeStatus>;

export const NodeSource = z.looseObject({
  agent: EvidenceAgent,
  quote: z.string().optional(),
  span: z.tuple([z.number(), z.number()]).optional(),
  imageId: z.string().optional(),
  region: z.string().optional(),
  url: z.string().optional(),
  title: z.string().optional(),
  retrievedAt: z.string().optional(),
  /** The FHIR resource a quote was read from (`Observation/bp-1`), for cases built from a FHIR Bundle. */
  resource: z.string().optional(),
  /** Set when a check flagged this source (e.g. quote not found verbatim, HD flagged an image finding). */
  flagged: z.string().optional(),
});
export type NodeSource = z.infer<typeof NodeSource>;

export const EvidenceNodeAttributes = z.looseObject({
  kind: NodeKind,
  // Categories are an open list in docs/architecture.md#data-contracts ("…"); the stored form must not reject a new one.
  category: z.string().min(1),
  label: z.string().min(1),
  detail: z.string().optional(),
  status: NodeStatus,
  /** Why the node was retracted (kept so auditors can see what was withdrawn and why). */
  retractedReason: z.string().optional(),
  sources: z.array(NodeSource),
  /** First source, kept as `source` for the docs/architecture.md#data-contracts contract. */
  source: NodeSource,
});
export type EvidenceNodeAttributes = z.infer<typeof EvidenceNodeAttributes>;

export const EdgeProvenance = z.looseObject({
  agent: EvidenceAgent,
  url: z.string().optional(),
  quote: z.string().optional(),
  retrievedAt: z.string().optional(),
});
export type EdgeProvenance = z.infer<typeof EdgeProvenance>;

export const EvidenceEdgeAttributes = z.looseObject({
  relation: Relation,
  provenance: EdgeProvenance,
});
export type EvidenceEdgeAttributes = z.infer<typeof EvidenceEdgeAttributes>;

/**
 * The evidence graph in graphology's serialised form (graphology-types' SerializedGraph), as
 * EvidenceGraph.export() writes it and EvidenceGraph.import() reads it. Graphs stored before
 * `sources` existed carry only `source`, so `sources` is optional here (import fills it in).
 */
export const SerializedEvidenceGraph = z.object({
  options: z
    .looseObject({ type: z.string().optional(), multi: z.boolean().optional(), allowSelfLoops: z.boolean().optional() })
    .optional(),
  attributes: z.record(z.string(), z.unknown()).optional(),
  nodes: z.array(
    z.object({
      key: z.string().min(1),
      attributes: EvidenceNodeAttributes.extend({ sources: z.array(NodeSource).optional() }),
    }),
  ),
  edges: z
    .array(
      z.object({
        key: z.string().optional(),
        source: z.string(),
        target: z.string(),
        attributes: EvidenceEdgeAttributes,
        undirected: z.boolean().optional(),
      }),
    )
    .default([]),
});
export type SerializedEvidenceGraph = z.infer<typeof SerializedEvidenceGraph>;

export interface NewEvidenceNode {
  kind: NodeKind;
  category: NodeCategory;
  label: string;
  detail?: string;
  source: NodeSource;
}
