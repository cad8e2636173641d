import { describe, expect, it } from "vitest";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";
import { nodeId } from "../../../src/core/evidence/ids.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";

const td = (quote: string) => ({ agent: "text-doctor" as const, quote });
const web = (url: string) => ({ agent: "web-search" as const, url, title: "Ref", retrievedAt: "2025-01-01T00:00:00Z" });

describe("EvidenceGraph nodes", () => {
  it("merges the same fact from two agents into one node with two sources", () => {
    const g = new EvidenceGraph();
    const a = g.addNode({ kind: "finding", category: "symptom", label: "Fever for 3 days", source: td("fever for 3 days") });
    const b = g.addNode({
      kind: "finding",
      category: "symptom",
      label: "fever for 3 days.",
      detail: "persistent",
      source: web("https://example.org/fever"),
    });
    expect(b).toBe(a);
    expect(a).toBe(nodeId("finding", "fever for 3 days"));
    expect(g.order).toBe(1);
    const n = g.getNode(a)!;
    expect(n.sources.map((s) => s.agent)).toEqual(["text-doctor", "web-search"]);
    expect(n.source).toEqual(td("fever for 3 days"));
    expect(n.label).toBe("Fever for 3 days");
    expect(n.detail).toBe("persistent"); // filled because it was empty
    g.addNode({ kind: "finding", category: "symptom", label: "FEVER for 3 days", detail: "other", source: td("x") });
    expect(g.getNode(a)!.detail).toBe("persistent"); // not overwritten
  });

  it("does not duplicate an identical source (key order does not matter)", () => {
    const g = new EvidenceGraph();
    const id = g.addNode({ kind: "knowledge", category: "literature", label: "K", source: { agent: "web-search", url: "u", title: "t" } });
    g.addNode({ kind: "knowledge", category: "literature", label: "k", source: { title: "t", url: "u", agent: "web-search" } });
    expect(g.getNode(id)!.sources).toHaveLength(1);
  });

  it("keeps different kinds apart", () => {
    const g = new EvidenceGraph();
    const f = g.addNode({ kind: "finding", category: "symptom", label: "cough", source: td("cough") });
    const h = g.addNode({ kind: "hypothesis", category: "diagnosis", label: "cough", source: td("cough") });
    expect(f).not.toBe(h);
    expect(g.order).toBe(2);
  });

  it("hands out copies, not the stored attributes", () => {
    const g = new EvidenceGraph();
    const id = g.addNode({ kind: "finding", category: "sign", label: "rash", source: td("rash") });
    g.getNode(id)!.sources.push(web("evil"));
    g.activeNodes()[0]!.label = "changed";
    expect(g.getNode(id)!.sources).toHaveLength(1);
    expect(g.getNode(id)!.label).toBe("rash");
  });

  it("retracts without deleting, records the reason, and stays retracted on re-add", () => {
    const g = new EvidenceGraph();
    const id = g.addNode({ kind: "finding", category: "imaging", label: "lytic lesion", source: { agent: "image-doctor", imageId: "img1" } });
    const other = g.addNode({ kind: "finding", category: "sign", label: "swelling", source: td("swelling") });
    expect(g.retract(id, "HD: not visible in image")).toBe(true);
    expect(g.retract("f:000000000000", "x")).toBe(false);
    expect(g.hasNode(id)).toBe(true);
    expect(g.getNode(id)!.status).toBe("retracted");
    expect(g.getNode(id)!.retractedReason).toBe("HD: not visible in image");
    expect(g.activeNodes().map((n) => n.id)).toEqual([other]);
    // The cheap readers agree with the copying one.
    expect(g.activeNodeIds()).toEqual([other]);
    expect(g.readActiveNodes()).toEqual(g.activeNodes());
    g.addNode({ kind: "finding", category: "imaging", label: "Lytic lesion", source: { agent: "image-doctor", imageId: "img1", region: "tibia" } });
    expect(g.getNode(id)!.status).toBe("retracted");
    g.retract(id, "second check");
    expect(g.getNode(id)!.retractedReason).toBe("HD: not visible in image; second check");
  });

  it("rejects malformed nodes", () => {
    const g = new EvidenceGraph();
    expect(() => g.addNode({ kind: "finding", category: "sign", label: " . ", source: td("") })).toThrow(MedmmvError);
    expect(() =>
      g.addNode({ kind: "nonsense" as never, category: "sign", label: "a", source: td("a") }),
    ).toThrow(MedmmvError);
    expect(() => g.addNode({ kind: "finding", category: "sign", label: "a", source: { agent: "someone" as never } })).toThrow(
      MedmmvError,
    );
  });
});

describe("EvidenceGraph edges", () => {
  it("needs both endpoints, refuses self-loops and does not duplicate", () => {
    const g = new EvidenceGraph();
    const f = g.addNode({ kind: "finding", category: "symptom", label: "fever", source: td("fever") });
    const h = g.addNode({ kind: "hypothesis", category: "diagnosis", label: "malaria", source: td("fever") });
    expect(g.addEdge(f, "h:ffffffffffff", "supports", { agent: "text-doctor" })).toBeNull();
    expect(g.addEdge(f, f, "supports", { agent: "text-doctor" })).toBeNull();
    const e1 = g.addEdge(f, h, "supports", { agent: "text-doctor" });
    expect(e1).toMatch(/^e:[0-9a-f]{12}$/);
    expect(g.addEdge(f, h, "supports", { agent: "text-doctor", quote: "different quote" })).toBe(e1);
    expect(g.size).toBe(1);
    // A different agent, url or relation is a different edge (multi graph).
    const e2 = g.addEdge(f, h, "supports", { agent: "web-search", url: "https://a" });
    const e3 = g.addEdge(f, h, "supports", { agent: "web-search", url: "https://b" });
    const e4 = g.addEdge(f, h, "suggests", { agent: "text-doctor" });
    const e5 = g.addEdge(h, f, "supports", { agent: "text-doctor" });
    expect(new Set([e1, e2, e3, e4, e5]).size).toBe(5);
    expect(g.size).toBe(5);
    expect(() => g.addEdge(f, h, "causes" as never, { agent: "text-doctor" })).toThrow(MedmmvError);
  });
});

/**
 * a → b → c → d,  e → b,  x (isolated),  c → a
 */
function smallGraph() {
  const g = new EvidenceGraph();
  const id: Record<string, string> = {};
  for (const l of ["a", "b", "c", "d", "e", "x"]) {
    id[l] = g.addNode({ kind: "finding", category: "other", label: `node ${l}`, source: td(l) });
  }
  const p = { agent: "text-doctor" as const };
  g.addEdge(id.a!, id.b!, "supports", p);
  g.addEdge(id.b!, id.c!, "suggests", p);
  g.addEdge(id.c!, id.d!, "explains", p);
  g.addEdge(id.e!, id.b!, "associated-with", p);
  g.addEdge(id.c!, id.a!, "contradicts", p);
  return { g, id };
}
const sorted = (xs: Iterable<string>) => [...xs].sort();
const edgeSet = (g: EvidenceGraph) => g.edges().map((e) => `${e.from}>${e.to}:${e.relation}`).sort();

describe("supportingSubgraph", () => {
  it("keeps cited nodes, their 1-hop neighbours in both directions, and edges among them", () => {
    const { g, id } = smallGraph();
    const sub = g.supportingSubgraph([id.b!, "f:unknown00000"]);
    // b's neighbours: a (a→b), c (b→c), e (e→b)
    expect(sorted(sub.nodes().map((n) => n.id))).toEqual(sorted([id.a!, id.b!, id.c!, id.e!]));
    // Edges with both ends kept: a→b, b→c, e→b, c→a (c→d dropped: d not kept)
    expect(edgeSet(sub)).toEqual(
      [`${id.a}>${id.b}:supports`, `${id.b}>${id.c}:suggests`, `${id.e}>${id.b}:associated-with`, `${id.c}>${id.a}:contradicts`].sort(),
    );
  });

  it("follows more hops when asked and none with hops 0", () => {
    const { g, id } = smallGraph();
    const two = g.supportingSubgraph([id.d!], { hops: 2 });
    // d ← c (hop 1); c's neighbours b, a (hop 2)
    expect(sorted(two.nodes().map((n) => n.id))).toEqual(sorted([id.a!, id.b!, id.c!, id.d!]));
    expect(two.size).toBe(4); // a→b, b→c, c→d, c→a
    const zero = g.supportingSubgraph([id.a!, id.c!], { hops: 0 });
    expect(sorted(zero.nodes().map((n) => n.id))).toEqual(sorted([id.a!, id.c!]));
    expect(edgeSet(zero)).toEqual([`${id.c}>${id.a}:contradicts`]);
    expect(g.supportingSubgraph([]).order).toBe(0);
    expect(() => g.supportingSubgraph([id.a!], { hops: -1 })).toThrow(MedmmvError);
  });

  it("keeps node attributes and does not share them with the parent graph", () => {
    const { g, id } = smallGraph();
    g.retract(id.e!, "wrong");
    const sub = g.supportingSubgraph([id.b!]);
    expect(sub.getNode(id.e!)!.status).toBe("retracted");
    sub.retract(id.a!, "only in the subgraph");
    expect(g.getNode(id.a!)!.status).toBe("active");
  });
});

describe("export / import", () => {
  it("round-trips and exports deterministically", () => {
    const { g, id } = smallGraph();
    g.addNode({ kind: "finding", category: "other", label: "node a", source: web("https://x") });
    g.retract(id.x!, "duplicate");
    const json = JSON.parse(JSON.stringify(g.export()));
    expect(json.options).toMatchObject({ type: "directed", multi: true });
    expect(json.nodes).toHaveLength(6);
    expect(json.edges).toHaveLength(5);
    const back = EvidenceGraph.import(json);
    expect(back.export()).toEqual(g.export());
    expect(back.getNode(id.a!)!.sources).toHaveLength(2);
    expect(back.getNode(id.x!)!.retractedReason).toBe("duplicate");
    // Dedup still works after import (edge keys are recomputed, not trusted).
    expect(back.addEdge(id.a!, id.b!, "supports", { agent: "text-doctor" })).not.toBeNull();
    expect(back.size).toBe(5);
  });

  it("exports the same JSON whatever the insertion order", () => {
    const one = new EvidenceGraph();
    const two = new EvidenceGraph();
    const nodes = [
      { kind: "finding" as const, category: "symptom" as const, label: "cough", source: td("cough") },
      { kind: "hypothesis" as const, category: "diagnosis" as const, label: "TB", source: td("cough") },
    ];
    const [c1, t1] = nodes.map((n) => one.addNode(n));
    const [t2, c2] = [...nodes].reverse().map((n) => two.addNode(n));
    one.addEdge(c1!, t1!, "suggests", { agent: "text-doctor" });
    two.addEdge(c2!, t2!, "suggests", { agent: "text-doctor" });
    expect(JSON.stringify(two.export())).toBe(JSON.stringify(one.export()));
  });

  it("rejects malformed input with INVALID_INPUT", () => {
    const bad: unknown[] = [
      null,
      { nodes: "x" },
      { nodes: [{ key: "f:1", attributes: { kind: "finding" } }], edges: [] },
      {
        nodes: [{ key: "f:1", attributes: { kind: "finding", category: "sign", label: "a", status: "active", source: { agent: "text-doctor" } } }],
        edges: [{ source: "f:1", target: "f:2", attributes: { relation: "supports", provenance: { agent: "text-doctor" } } }],
      },
    ];
    for (const b of bad) {
      try {
        EvidenceGraph.import(b);
        expect.unreachable();
      } catch (e) {
        expect((e as MedmmvError).code).toBe("INVALID_INPUT");
      }
    }
  });
});

describe("merge", () => {
  it("unions nodes and edges under the merging rule", () => {
    const text = new EvidenceGraph();
    const f = text.addNode({ kind: "finding", category: "symptom", label: "Night sweats", source: td("night sweats") });
    const h = text.addNode({ kind: "hypothesis", category: "diagnosis", label: "Tuberculosis", source: td("night sweats") });
    text.addEdge(f, h, "suggests", { agent: "text-doctor" });

    const search = new EvidenceGraph();
    const f2 = search.addNode({ kind: "finding", category: "symptom", label: "night sweats.", source: web("https://who.int/tb") });
    const k = search.addNode({ kind: "knowledge", category: "literature", label: "TB causes night sweats", source: web("https://who.int/tb") });
    search.addEdge(k, f2, "explains", { agent: "web-search", url: "https://who.int/tb" });
    search.addEdge(f, h, "suggests", { agent: "text-doctor" }); // endpoints unknown there → null
    expect(search.size).toBe(1);

    text.merge(search);
    expect(f2).toBe(f);
    expect(text.order).toBe(3);
    expect(text.size).toBe(2);
    expect(text.getNode(f)!.sources.map((s) => s.agent)).toEqual(["text-doctor", "web-search"]);
    expect(text.getNode(f)!.label).toBe("Night sweats");

    // Merging again changes nothing.
    const before = JSON.stringify(text.export());
    text.merge(search);
    expect(JSON.stringify(text.export())).toBe(before);
  });

  it("lets a retraction from either side win", () => {
    const a = new EvidenceGraph();
    const b = new EvidenceGraph();
    const n = { kind: "finding" as const, category: "imaging" as const, label: "effusion", source: { agent: "image-doctor" as const, imageId: "i" } };
    const id = a.addNode(n);
    b.addNode(n);
    b.retract(id, "HD flagged");
    a.merge(b);
    expect(a.getNode(id)!.status).toBe("retracted");
    expect(a.getNode(id)!.retractedReason).toBe("HD flagged");
  });
});
