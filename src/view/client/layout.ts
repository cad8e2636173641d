/**
 * A small deterministic force layout (Fruchterman–Reingold with gravity): the same graph always
 * lands in the same place, so screenshots and auditors' memories of "where that node was" hold
 * between visits. Kinds start on separate rings (findings inside, knowledge and hypotheses
 * outside) so the picture reads from evidence outward. The work is capped, so a 300-node
 * graph lays out in tens of milliseconds.
 */
export interface LayoutNode {
  id: string;
  kind: string;
}

const RING: Record<string, number> = { finding: 1, knowledge: 1.8, hypothesis: 2.4 };
const MAX_PAIR_WORK = 6_000_000;

export function forceLayout(nodes: LayoutNode[], edges: Array<[string, string]>): Map<string, { x: number; y: number }> {
  const n = nodes.length;
  const out = new Map<string, { x: number; y: number }>();
  if (n === 0) return out;
  const index = new Map(nodes.map((v, i) => [v.id, i]));
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  const byKind = new Map<string, number[]>();
  nodes.forEach((v, i) => {
    const list = byKind.get(v.kind) ?? [];
    list.push(i);
    byKind.set(v.kind, list);
  });
  const scale = Math.sqrt(n) * 10;
  for (const [kind, list] of byKind) {
    const r = (RING[kind] ?? 2) * scale;
    list.forEach((i, j) => {
      // Offset each ring's start so kinds interleave around the circle.
      const a = (2 * Math.PI * j) / list.length + (RING[kind] ?? 2);
      xs[i] = r * Math.cos(a);
      ys[i] = r * Math.sin(a);
    });
  }
  const links: Array<[number, number]> = [];
  for (const [s, t] of edges) {
    const a = index.get(s);
    const b = index.get(t);
    if (a !== undefined && b !== undefined && a !== b) links.push([a, b]);
  }
  const k = (scale * 2) / Math.sqrt(n);
  const iterations = Math.max(30, Math.min(300, Math.floor(MAX_PAIR_WORK / Math.max(1, (n * n) / 2))));
  const dx = new Float64Array(n);
  const dy = new Float64Array(n);
  let temperature = scale;
  for (let it = 0; it < iterations; it++) {
    dx.fill(0);
    dy.fill(0);
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        let ddx = xs[i] - xs[j];
        let ddy = ys[i] - ys[j];
        let d2 = ddx * ddx + ddy * ddy;
        if (d2 < 1e-6) {
          // Coincident nodes: separate them along a fixed direction derived from the indices.
          ddx = ((i * 7 + j * 3) % 11) - 5 + 0.5;
          ddy = ((i * 5 + j * 11) % 13) - 6 + 0.5;
          d2 = ddx * ddx + ddy * ddy;
        }
        const f = (k * k) / d2;
        dx[i] += ddx * f;
        dy[i] += ddy * f;
        dx[j] -= ddx * f;
        dy[j] -= ddy * f;
      }
    }
    for (const [a, b] of links) {
      const ddx = xs[a] - xs[b];
      const ddy = ys[a] - ys[b];
      const d = Math.sqrt(ddx * ddx + ddy * ddy) || 1e-3;
      const f = d / k;
      dx[a] -= ddx * f;
      dy[a] -= ddy * f;
      dx[b] += ddx * f;
      dy[b] += ddy * f;
    }
    for (let i = 0; i < n; i++) {
      // Gravity keeps disconnected pieces from drifting off the screen.
      dx[i] -= xs[i] * 0.05;
      dy[i] -= ys[i] * 0.05;
      const len = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 1;
      const step = Math.min(len, temperature);
      xs[i] += (dx[i] / len) * step;
      ys[i] += (dy[i] / len) * step;
    }
    temperature = Math.max(scale * 0.01, temperature * 0.96);
  }
  nodes.forEach((v, i) => out.set(v.id, { x: xs[i], y: ys[i] }));
  return out;
}
