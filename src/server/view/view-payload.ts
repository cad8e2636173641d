import type { DicomProvenance } from "../../core/contracts/clinical-case.js";
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type { EvidenceEdgeAttributes, EvidenceNodeAttributes } from "../../core/contracts/evidence.js";
import type { ConversationTurn } from "../store/case-store.js";
import type { AnswerSummary } from "./answer-summary.js";
import type { TrailRow } from "./trail-words.js";

/**
 * The JSON the server embeds in the page and the browser bundle reads. Type-only on purpose:
 * the client bundle imports it, and nothing with a runtime cost may ride along.
 */
export interface ViewImage {
  id: string;
  mimeType: string;
  caption?: string;
  /** data: URI, present only for an accepted image type with well-formed base64. */
  dataUri?: string;
  /** For a rendered DICOM frame: where it came from and how it was windowed. */
  dicom?: ViewDicomProvenance;
}

/** What the audit view shows beside a DICOM rendering: the stored provenance. */
export type ViewDicomProvenance = DicomProvenance;

export interface ViewCase {
  question: string;
  notes?: string;
  options?: Record<string, string>;
  images: ViewImage[];
  /**
   * The text TextDoctor quotes were located in (notes, blank line, question); node `span`s
   * index into it, so the page can highlight the exact words a fact rests on.
   */
  sourceText: string;
}

/**
 * The evidence graph as graphology exports it (EvidenceGraph.export()), restated with the
 * fields the page relies on made required. Declared here rather than imported from
 * evidence-graph.ts so the browser build never pulls server modules in.
 */
export interface ViewGraph {
  nodes: Array<{ key: string; attributes: EvidenceNodeAttributes }>;
  edges: Array<{ key: string; source: string; target: string; attributes: EvidenceEdgeAttributes }>;
}

/** One conversation turn on the case (docs/architecture.md#clinical-pathways-and-conversations), in the order asked. */
export type ViewTurn = Pick<ConversationTurn, "turn" | "question" | "answer" | "step" | "category" | "contextConflict" | "evidence">;

export interface ViewPayload {
  version: 1;
  mode: "served" | "offline";
  generatedAt: string;
  result: DiagnosisResult;
  /** The graph drawn: the full evidence graph E when stored, else the selected path's E_p. */
  graph: ViewGraph;
  graphIsFull: boolean;
  /** Node ids of E_p, the selected path's supporting subgraph (highlighted by default). */
  subgraphNodeIds: string[];
  /** null when the report was made from a bare result without its case. */
  caseInput: ViewCase | null;
  /** The conversation on the case; absent or empty when nobody asked anything. */
  turns?: ViewTurn[];
  /** The evidence graph as files for Gephi, Cytoscape desktop or networkx (served pages only). */
  downloads?: ViewDownload[];
  /** How sure, in words (answer-state.ts, the rule the CDS card's indicator reads too). */
  summary: AnswerSummary;
  /** Who submitted the case, when, and what the EHR said its clinicians did with its card (served pages). */
  record?: ViewRecord;
}

/** The stored case around the result: its submitter and the feedback on its CDS card. */
export interface ViewRecord {
  submittedBy: string;
  createdAt: string;
  /** Oldest first: "accepted" or "overridden: <reason>", when, and which EHR user. */
  feedback: Array<{ at: string; text: string; by: string }>;
  /** The case's access trail, oldest first (for auditors and admins only; the first ones). */
  trail?: TrailRow[];
}

/** A same-origin download link of the page (its URL carries the page's signed-link token). */
export interface ViewDownload {
  label: string;
  url: string;
}

/** Which graph the audit page shows: the selected path's subgraph or the whole graph. */
export type GraphMode = "path" | "full";

/** What tests (and curious auditors in the console) can read about the live page. */
export interface ViewState {
  ready: boolean;
  renderMs: number | null;
  layoutMs: number | null;
  /** Milliseconds from script start at which each phase ended (payload, graph, sections, frame). */
  phases: Record<string, number>;
  nodeCount: number;
  edgeCount: number;
  renderedNodeCount: number;
  renderedEdgeCount: number;
  highlighted: string[];
  matches: string[];
  selectedNode: string | null;
  activeClaim: string | null;
  subgraphNodes: string[];
  mode: GraphMode;
  /** True once the drawing shows the last change (mode, highlight, search, selection, camera): read nodeDisplay/nodeClientPosition then. */
  settled: boolean;
  graphError: string | null;
  cspViolations: string[];
  errors: string[];
  /** Milliseconds the last click/keyboard handler took. */
  lastHandlerMs: number | null;
  nodeClientPosition(id: string): { x: number; y: number } | null;
  nodeDisplay(id: string): { color: string; shape: string | null; size: number; opacity: number; label: string | null } | null;
}

/**
 * What the page of a case still queued or running carries instead of a payload: where to
 * follow the case (Server-Sent Events) and where its finished audit view's payload will be.
 * Both URLs are same-origin and carry the page's signed-link token, since EventSource
 * cannot send an Authorization header.
 */
export interface ViewLive {
  version: 1;
  caseId: string;
  status: string;
  eventsUrl: string;
  payloadUrl: string;
  /** The case's question, shown while it runs. */
  question?: string;
}

/** What tests can read about a live page (window.__medmmvLive). */
export interface LiveState {
  /** Last status seen: queued, running, then completed/abstained/failed (or deleted). */
  status: string;
  /** Events shown so far, history included. */
  events: number;
  /** True once the case's final event has come and the audit view replaced the progress. */
  finished: boolean;
  /** Why the live view stopped without becoming the audit view (failure, deletion, a refused link). */
  stopped: string | null;
}
