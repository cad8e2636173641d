import { describe, expect, it } from "vitest";
import { MultiDirectedGraph } from "graphology";
import { parse as parseGraphml } from "graphology-graphml";
import { parse as parseGexf } from "graphology-gexf";
import type { SerializedEvidenceGraph } from "../../../src/core/contracts/evidence.js";
import { flattenAttributes, toGexf, toGraphml } from "../../../src/core/evidence/graph-formats.js";
import { readWithNetworkx } from "../../support/networkx-graphml.js";

/** A graph with what real ones carry and what XML makes hard: nested sources with spans, parallel edges, markup, CR, control characters, non-BMP text. */
function tricky(): SerializedEvidenceGraph {
  const source = { agent: "text-doctor" as const, quote: 'ST elevation in "II, III" & aVF <acute>', span: [12, 48] as [number, number] };
  return {
    options: { type: "directed", multi: true, allowSelfLoops: true },
    attributes: { caseId: "c-1" },
    nodes: [
      { key: "f:st", attributes: { kind: "finding", category: "lab", label: "ST elevation\r\nline two\ttab", status: "active", sources: [source], source, confidence: 0.75, rank: 2, verified: true } },
      { key: "k:mi", attributes: { kind: "knowledge", category: "literature", label: "Inferior MI 😀 漢字 \u0001 bell", status: "retracted", retractedReason: "contradicted", sources: [{ agent: "web-search", url: "https://example.org/a?b=1&c=2", retrievedAt: "2026-01-01T00:00:00Z" }], source: { agent: "web-search", url: "https://example.org/a?b=1&c=2" }, confidence: 1, rank: 3, verified: false } },
      { key: "h:x&<y>", attributes: { kind: "hypothesis", category: "diagnosis", label: "x", status: "active", sources: [], source: { agent: "text-doctor" } } },
    ],
    edges: [
      { key: "e1", source: "f:st", target: "k:mi", attributes: { relation: "supports", provenance: { agent: "web-search", quote: "q", url: "https://example.org" } } },
      { key: "e2", source: "f:st", target: "k:mi", attributes: { relation: "contradicts", provenance: { agent: "text-doctor" } } },
      { key: "e3", source: "k:mi", target: "h:x&<y>", attributes: { relation: "suggests", provenance: { agent: "text-doctor" }, weight: 2.5 } },
    ],
  } as unknown as SerializedEvidenceGraph;
}

/** What a reader should find: the flattened attributes, with characters XML cannot carry replaced. */
const xmlSafe = (v: unknown) => (typeof v === "string" ? v.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g, "\uFFFD") : v);
const expected = (attrs: Record<string, unknown>) => Object.fromEntries(Object.entries(flattenAttributes(attrs)).map(([k, v]) => [k, xmlSafe(v)]));

describe("GraphML", () => {
  it("networkx reads the same nodes, edges (parallel ones kept) and typed attributes as the JSON graph", async () => {
    const g = tricky();
    const read = await readWithNetworkx(toGraphml(g));
    expect(read.directed).toBe(true);
    expect(Object.keys(read.nodes).sort()).toEqual(g.nodes.map((n) => n.key).sort());
    for (const n of g.nodes) expect(read.nodes[n.key]).toEqual(expected(n.attributes));
    expect(read.nodes["f:st"]!.rank).toBe(2);
    expect(read.nodes["f:st"]!.verified).toBe(true);
    expect(JSON.parse(read.nodes["f:st"]!.sources as string)).toEqual(g.nodes[0]!.attributes.sources);
    expect(read.edges).toHaveLength(3);
    for (const e of g.edges) {
      const got = read.edges.find((x) => x[2] === e.key)!;
      expect([got[0], got[1], got[3]]).toEqual([e.source, e.target, expected(e.attributes)]);
    }
  });

  it("declares one typed key per node and edge attribute, and graphology-graphml's parser reads it back", () => {
    const g = tricky();
    const xml = toGraphml(g);
    expect(xml).toContain('<key id="n0" for="node" attr.name="category" attr.type="string"/>');
    expect(xml).toMatch(/attr\.name="confidence" attr\.type="double"/);
    expect(xml).toMatch(/attr\.name="rank" attr\.type="long"/);
    expect(xml).toMatch(/attr\.name="verified" attr\.type="boolean"/);
    const back = parseGraphml(MultiDirectedGraph, xml);
    expect(back.order).toBe(3);
    expect(back.size).toBe(3);
    expect(back.getNodeAttributes("f:st")).toEqual(expected(g.nodes[0]!.attributes));
    expect(back.getEdgeAttributes("e3")).toMatchObject({ relation: "suggests", weight: 2.5 });
  });

  it("an attribute named like an Object method is written only where a node has it", () => {
    const g = tricky();
    g.nodes[0]!.attributes = { ...g.nodes[0]!.attributes, toString: "kept" };
    const xml = toGraphml(g);
    expect(xml).not.toContain("native code");
    expect(xml.match(/<data key="n\d+">kept<\/data>/g)).toHaveLength(1);
    expect(parseGraphml(MultiDirectedGraph, xml).getNodeAttribute("f:st", "toString")).toBe("kept");
  });
});

describe("GEXF", () => {
  it("graphology-gexf's parser reads back every node, edge and attribute", () => {
    const g = tricky();
    const back = parseGexf(MultiDirectedGraph, toGexf(g));
    expect(back.nodes().sort()).toEqual(g.nodes.map((n) => n.key).sort());
    expect(back.size).toBe(3);
    for (const n of g.nodes) expect(back.getNodeAttributes(n.key)).toMatchObject(expected(n.attributes));
    expect(back.getEdgeAttributes("e1")).toMatchObject({ relation: "supports", provenance: JSON.stringify(g.edges[0]!.attributes.provenance) });
  });
});
