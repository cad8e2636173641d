/**
 * A small deterministic layout: each connected piece of the graph gets a force layout
 * (Fruchterman–Reingold with a little gravity), then the pieces are packed on shelves, largest
 * first, with unconnected nodes in a grid at the end. Packing keeps separate pieces from
 * pushing each other to the edges of the screen and squeezing everything else into a dot.
 * Deterministic so that the same graph always looks the same between visits and in screenshots;
 * the work is capped so a 300-node graph lays out in well under a second on a slow machine.
 */
export interface LayoutNode {
  id: string;
  kind: string;
}

/** Kinds start on separate rings (findings inside) so a piece reads from evidence outward. */
const RING: Record<string, number> = { finding: 0.6, knowledge: 1, hypothesis: 1.3 };
const MAX_PAIR_WORK = 3_000_000;
/** Ideal distance between linked nodes, in layout units. */
const K = 1;
const GAP = 1.5 * K;

function components(n: number, links: Array<[number, number]>): number[][] {
  const parent = Array.from({ length: n }, (_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) {
      parent[i] = parent[parent[i]!]!;
      i = parent[i]!;
    }
    return i;
  };
  for (const [a, b] of links) parent[find(a)] = find(b);
  const groups = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const r = find(i);
    const g = groups.get(r) ?? [];
    g.push(i);
    groups.set(r, g);
  }
  return [...groups.values()];
}

/** Force layout of one connected piece; returns positions relative to its own centre. */
function layoutPiece(members: number[], kinds: string[], links: Array<[number, number]>): Array<[number, number]> {
  const m = members.length;
  const local = new Map(members.map((g, i) => [g, i]));
  const xs = new Float64Array(m);
  const ys = new Float64Array(m);
  const radius = Math.sqrt(m) * K;
  members.forEach((g, i) => {
    // Golden-angle spiral within each kind's ring: spread out, and no two nodes coincide.
    const a = i * 2.399963229728653;
    const r = radius * (RING[kinds[g]!] ?? 1) * (0.5 + (0.5 * (i + 1)) / m);
    xs[i] = r * Math.cos(a);
    ys[i] = r * Math.sin(a);
  });
  const edges: Array<[number, number]> = [];
  for (const [a, b] of links) {
    const la = local.get(a);
    const lb = local.get(b);
    if (la !== undefined && lb !== undefined) edges.push([la, lb]);
  }
  const iterations = Math.max(40, Math.min(250, Math.floor(MAX_PAIR_WORK / Math.max(1, (m * m) / 2))));
  const dx = new Float64Array(m);
  const dy = new Float64Array(m);
  let temperature = radius / 2;
  const cool = Math.pow(0.02, 1 / iterations);
  for (let it = 0; it < iterations; it++) {
    dx.fill(0);
    dy.fill(0);
    for (let i = 0; i < m; i++) {
      for (let j = i + 1; j < m; j++) {
        const ddx = xs[i] - xs[j];
        const ddy = ys[i] - ys[j];
        const d2 = Math.max(ddx * ddx + ddy * ddy, 1e-4);
        const f = (K * K) / d2;
        dx[i] += ddx * f;
        dy[i] += ddy * f;
        dx[j] -= ddx * f;
        dy[j] -= ddy * f;
      }
    }
    for (const [a, b] of edges) {
      const ddx = xs[a] - xs[b];
      const ddy = ys[a] - ys[b];
      const f = Math.sqrt(ddx * ddx + ddy * ddy) / K;
      dx[a] -= ddx * f;
      dy[a] -= ddy * f;
      dx[b] += ddx * f;
      dy[b] += ddy * f;
    }
    for (let i = 0; i < m; i++) {
      dx[i] -= xs[i] * 0.1;
      dy[i] -= ys[i] * 0.1;
      const len = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]);
      if (len === 0) continue;
      const step = Math.min(len, temperature);
      xs[i] += (dx[i] / len) * step;
      ys[i] += (dy[i] / len) * step;
    }
    temperature *= cool;
  }
  let cx = 0;
  let cy = 0;
  for (let i = 0; i < m; i++) {
    cx += xs[i] / m;
    cy += ys[i] / m;
  }
  return members.map((_, i) => [xs[i] - cx, ys[i] - cy]);
}

export function forceLayout(nodes: LayoutNode[], edges: Array<[string, string]>): Map<string, { x: number; y: number }> {
  const out = new Map<string, { x: number; y: number }>();
  const n = nodes.length;
  if (n === 0) return out;
  const index = new Map(nodes.map((v, i) => [v.id, i]));
  const kinds = nodes.map((v) => v.kind);
  const links: Array<[number, number]> = [];
  for (const [s, t] of edges) {
    const a = index.get(s);
    const b = index.get(t);
    if (a !== undefined && b !== undefined && a !== b) links.push([a, b]);
  }
  const groups = components(n, links);
  const singles = groups.filter((g) => g.length === 1).map((g) => g[0]!);
  const pieces = groups.filter((g) => g.length > 1).sort((a, b) => b.length - a.length || a[0]! - b[0]!);

  type Box = { members: number[]; pos: Array<[number, number]>; w: number; h: number };
  const boxes: Box[] = pieces.map((members) => {
    const pos = layoutPiece(members, kinds, links);
    let minX = Infinity;
    let maxX = -Infinity;
    let minY = Infinity;
    let maxY = -Infinity;
    for (const [x, y] of pos) {
      minX = Math.min(minX, x);
      maxX = Math.max(maxX, x);
      minY = Math.min(minY, y);
      maxY = Math.max(maxY, y);
    }
    return { members, pos: pos.map(([x, y]) => [x - minX, y - minY] as [number, number]), w: maxX - minX, h: maxY - minY };
  });
  if (singles.length) {
    // Unlinked facts: a compact grid, in kind order so the kinds stay together.
    const ordered = [...singles].sort((a, b) => (kinds[a]! < kinds[b]! ? -1 : kinds[a]! > kinds[b]! ? 1 : a - b));
    const cols = Math.ceil(Math.sqrt(ordered.length * 1.6));
    const pos = ordered.map((_, i) => [(i % cols) * GAP, Math.floor(i / cols) * GAP] as [number, number]);
    boxes.push({ members: ordered, pos, w: (Math.min(cols, ordered.length) - 1) * GAP, h: Math.floor((ordered.length - 1) / cols) * GAP });
  }

  // Shelf packing into a roughly 16:10 area.
  const area = boxes.reduce((s, b) => s + (b.w + GAP) * (b.h + GAP), 0);
  const rowWidth = Math.max(Math.sqrt(area * 1.6), ...boxes.map((b) => b.w + GAP));
  let x = 0;
  let y = 0;
  let rowHeight = 0;
  for (const b of boxes) {
    if (x > 0 && x + b.w > rowWidth) {
      x = 0;
      y += rowHeight + GAP;
      rowHeight = 0;
    }
    b.members.forEach((g, i) => {
      const [px, py] = b.pos[i]!;
      // Sigma's y axis points up; keep rows reading top to bottom.
      out.set(nodes[g]!.id, { x: x + px, y: -(y + py) });
    });
    x += b.w + GAP;
    rowHeight = Math.max(rowHeight, b.h);
  }
  return out;
}
