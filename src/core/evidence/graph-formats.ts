/**
 * The evidence graph in the formats analysts open: GraphML (Gephi, Cytoscape desktop,
 * networkx, yEd) and GEXF (Gephi). Every node and edge attribute of the stored graph is kept:
 * scalars as typed attributes, nested values (sources with their quotes, spans and URLs,
 * edge provenance) as JSON strings, since neither format nests.
 *
 * GEXF goes through graphology-gexf's writer. graphology-graphml ships only a parser, so
 * GraphML is written here, with a typed `<key>` declaration for every attribute (the type
 * each attribute's values share: boolean, long, double, else string).
 */
import { MultiDirectedGraph } from "graphology";
import { write as writeGexf } from "graphology-gexf";
import type { SerializedEvidenceGraph } from "../contracts/evidence.js";

type Flat = Record<string, string | number | boolean>;

/** Scalars as they are; objects and arrays as JSON; null and undefined left out (neither format has them). */
export function flattenAttributes(attrs: Record<string, unknown> | undefined): Flat {
  // No prototype: an attribute named "__proto__" or "toString" is an attribute like any other.
  const out: Flat = Object.create(null) as Flat;
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined) continue;
    if (typeof v === "string" || typeof v === "boolean") out[k] = v;
    else if (typeof v === "number") {
      if (Number.isFinite(v)) out[k] = v;
    } else out[k] = JSON.stringify(v);
  }
  return out;
}

/** Characters XML 1.0 cannot carry at all replaced with U+FFFD. */
function xmlChars(s: string): string {
  return s
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g, "\uFFFD")
    .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

/** Flattened attributes with XML-safe strings (graphology-gexf's writer escapes markup, not these). */
function xmlSafeAttributes(attrs: Record<string, unknown> | undefined): Flat {
  return Object.fromEntries(Object.entries(flattenAttributes(attrs)).map(([k, v]) => [k, typeof v === "string" ? xmlChars(v) : v]));
}

type GraphmlType = "boolean" | "long" | "double" | "string";

function typeOf(values: Array<string | number | boolean>): GraphmlType {
  if (values.every((v) => typeof v === "boolean")) return "boolean";
  if (values.every((v) => typeof v === "number" && Number.isInteger(v))) return "long";
  if (values.every((v) => typeof v === "number")) return "double";
  return "string";
}

/**
 * XML 1.0 text: markup escaped, a carriage return kept as a character reference (a parser
 * would turn a literal one into a newline), characters XML cannot carry at all (most C0
 * controls, lone surrogates, U+FFFE/FFFF) replaced with U+FFFD.
 */
function xmlText(s: string, inAttribute = false): string {
  let out = xmlChars(s)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/\r/g, "&#13;");
  if (inAttribute) out = out.replace(/"/g, "&quot;").replace(/\n/g, "&#10;").replace(/\t/g, "&#9;");
  return out;
}

interface Declared {
  id: string;
  name: string;
  type: GraphmlType;
}

function declare(prefix: string, rows: Flat[]): Declared[] {
  const values = new Map<string, Array<string | number | boolean>>();
  for (const r of rows) for (const [k, v] of Object.entries(r)) (values.get(k) ?? values.set(k, []).get(k)!).push(v);
  return [...values.keys()].sort().map((name, i) => ({ id: `${prefix}${i}`, name, type: typeOf(values.get(name)!) }));
}

/** GraphML 1.0 of a stored evidence graph (directed; parallel edges kept, each with its id). */
export function toGraphml(graph: SerializedEvidenceGraph): string {
  const nodes = graph.nodes.map((n) => ({ key: n.key, attrs: flattenAttributes(n.attributes) }));
  const edges = (graph.edges ?? []).map((e, i) => ({ key: e.key ?? `e${i}`, source: e.source, target: e.target, attrs: flattenAttributes(e.attributes) }));
  const graphAttrs = flattenAttributes(graph.attributes);
  const nodeKeys = declare("n", nodes.map((n) => n.attrs));
  const edgeKeys = declare("e", edges.map((e) => e.attrs));
  const graphKeys = declare("g", [graphAttrs]);
  const lines: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">',
  ];
  const keyLines = (kind: string, keys: Declared[]) => keys.map((k) => `  <key id="${k.id}" for="${kind}" attr.name="${xmlText(k.name, true)}" attr.type="${k.type}"/>`);
  lines.push(...keyLines("graph", graphKeys), ...keyLines("node", nodeKeys), ...keyLines("edge", edgeKeys));
  const data = (keys: Declared[], attrs: Flat, indent: string) =>
    keys.filter((k) => attrs[k.name] !== undefined).map((k) => `${indent}<data key="${k.id}">${xmlText(String(attrs[k.name]!))}</data>`);
  lines.push('  <graph id="evidence" edgedefault="directed">');
  lines.push(...data(graphKeys, graphAttrs, "    "));
  for (const n of nodes) lines.push(`    <node id="${xmlText(n.key, true)}">`, ...data(nodeKeys, n.attrs, "      "), "    </node>");
  for (const e of edges) lines.push(`    <edge id="${xmlText(e.key, true)}" source="${xmlText(e.source, true)}" target="${xmlText(e.target, true)}">`, ...data(edgeKeys, e.attrs, "      "), "    </edge>");
  lines.push("  </graph>", "</graphml>", "");
  return lines.join("\n");
}

/** GEXF 1.3 of a stored evidence graph, by graphology-gexf's writer, with the same flattened attributes. */
export function toGexf(graph: SerializedEvidenceGraph): string {
  const g = new MultiDirectedGraph<Flat, Flat>();
  for (const n of graph.nodes) g.addNode(xmlChars(n.key), xmlSafeAttributes(n.attributes));
  (graph.edges ?? []).forEach((e, i) => g.addDirectedEdgeWithKey(xmlChars(e.key ?? `e${i}`), xmlChars(e.source), xmlChars(e.target), xmlSafeAttributes(e.attributes)));
  return writeGexf(g, {
    version: "1.3",
    formatNode: (_key, attributes) => ({ label: typeof attributes.label === "string" ? attributes.label : undefined, attributes }),
    formatEdge: (_key, attributes) => ({ label: typeof attributes.relation === "string" ? attributes.relation : undefined, attributes }),
  });
}
