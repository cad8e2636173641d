import { describe, expect, it } from "vitest";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";
import { renderEvidenceForPrompt } from "../../../src/core/evidence/render-for-prompt.js";

/**
 * The search planner is sent the graph before the web search, the fact-checkers the graph
 * after it: the first rendering, less its closing count line, must be a prefix of the second,
 * or providers' prompt caches could not serve it.
 */
describe("evidence rendering is stable as the web search adds to it", () => {
  it("the case's findings come first and unchanged; web knowledge, relations and the counts follow", () => {
    const g = new EvidenceGraph();
    const a = g.addNode({ kind: "finding", category: "symptom", label: "fever", source: { agent: "text-doctor", quote: "fever", span: [0, 5] } });
    const b = g.addNode({ kind: "finding", category: "sign", label: "dullness to percussion", source: { agent: "text-doctor", quote: "dullness", span: [10, 18] } });
    g.addNode({ kind: "finding", category: "imaging", label: "right lower lobe opacity", source: { agent: "image-doctor", imageId: "cxr", region: "right lower zone" } });
    const before = renderEvidenceForPrompt(g);
    const k = g.addNode({ kind: "knowledge", category: "literature", label: "lobar consolidation causes dullness", source: { agent: "web-search", url: "https://example.org/a", title: "A", retrievedAt: "2026-01-01T00:00:00.000Z" } });
    g.addEdge(k, b, "explains", { agent: "web-search", url: "https://example.org/a", retrievedAt: "2026-01-01T00:00:00.000Z" });
    g.addEdge(a, b, "associated-with", { agent: "web-search", url: "https://example.org/a", retrievedAt: "2026-01-01T00:00:00.000Z" });
    const after = renderEvidenceForPrompt(g);
    const lines = before.split("\n");
    expect(lines.at(-1)).toBe("Evidence graph: 3 active nodes, 0 relations.");
    expect(after.startsWith(lines.slice(0, -1).join("\n") + "\n")).toBe(true);
    expect(after.split("\n").at(-1)).toBe("Evidence graph: 4 active nodes, 2 relations.");
  });
});
