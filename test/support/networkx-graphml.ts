import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** What networkx read from a GraphML file: node attributes by id, edges as [source, target, edge id, attributes]. */
export interface NetworkxGraph {
  directed: boolean;
  nodes: Record<string, Record<string, unknown>>;
  edges: Array<[string, string, string | null, Record<string, unknown>]>;
}

// networkx keeps an edge's id as the multigraph key and also as an "id" attribute; the id is
// compared as the key, so the attribute is dropped.
const READER = `
import json, sys, networkx as nx
g = nx.read_graphml(sys.argv[1])
edges = []
for u, v, *rest in (g.edges(keys=True, data=True) if g.is_multigraph() else g.edges(data=True)):
    d = dict(rest[-1])
    eid = d.pop("id", rest[0] if g.is_multigraph() else None)
    edges.append([u, v, eid, d])
print(json.dumps({"directed": g.is_directed(), "nodes": {n: d for n, d in g.nodes(data=True)}, "edges": edges}))
`;

/**
 * Reads GraphML with an independent reader: networkx, from Debian's python3-networkx under
 * /usr/bin/python3 (the python3 on PATH may be another one without it).
 */
export async function readWithNetworkx(graphml: string): Promise<NetworkxGraph> {
  const dir = await mkdtemp(join(tmpdir(), "medmmv-graphml-"));
  try {
    const file = join(dir, "graph.graphml");
    await writeFile(file, graphml, "utf8");
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile("/usr/bin/python3", ["-c", READER, file], { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, out, errText) => (err ? reject(new Error(`networkx failed: ${errText || err.message}`)) : resolve(out))),
    );
    return JSON.parse(stdout) as NetworkxGraph;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
