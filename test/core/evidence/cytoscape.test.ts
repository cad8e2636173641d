import { describe, expect, it } from "vitest";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";
import { toCytoscape } from "../../../src/core/evidence/cytoscape.js";

describe("toCytoscape", () => {
  it("emits one element per node and edge with flat data", () => {
    const g = new EvidenceGraph();
    const f = g.addNode({ kind: "finding", category: "imaging", label: "Periosteal reaction", source: { agent: "image-doctor", imageId: "img1", region: "distal femur" } });
    const k = g.addNode({ kind: "knowledge", category: "literature", label: "Sunburst pattern in osteosarcoma", source: { agent: "web-search", url: "https://ref.example/os", title: "OS" } });
    const h = g.addNode({ kind: "hypothesis", category: "diagnosis", label: "Osteosarcoma", source: { agent: "text-doctor" } });
    g.addNode({ kind: "hypothesis", category: "diagnosis", label: "osteosarcoma", source: { agent: "web-search", url: "https://ref.example/os" } });
    g.addEdge(f, h, "supports", { agent: "image-doctor" });
    g.addEdge(k, h, "explains", { agent: "web-search", url: "https://ref.example/os" });
    g.retract(f, "not visible");

    const cy = toCytoscape(g);
    expect(cy.elements.nodes).toHaveLength(3);
    expect(cy.elements.edges).toHaveLength(2);
    const byId = new Map(cy.elements.nodes.map((n) => [n.data.id, n.data]));
    expect(byId.get(f)).toMatchObject({ label: "Periosteal reaction", kind: "finding", category: "imaging", status: "retracted", agent: "image-doctor", imageId: "img1", region: "distal femur", retractedReason: "not visible" });
    expect(byId.get(h)).toMatchObject({ agent: "text-doctor", agents: ["text-doctor", "web-search"], sourceCount: 2, url: "https://ref.example/os" });
    const web = cy.elements.edges.find((e) => e.data.relation === "explains")!.data;
    expect(web).toEqual({ id: web.id, source: k, target: h, relation: "explains", agent: "web-search", url: "https://ref.example/os" });
    // Every edge endpoint is a node element (Cytoscape refuses dangling edges).
    for (const e of cy.elements.edges) {
      expect(byId.has(e.data.source) && byId.has(e.data.target)).toBe(true);
    }
    expect(JSON.parse(JSON.stringify(cy))).toEqual(cy);
  });
});
