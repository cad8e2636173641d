// Issue: one inline pathway at the old schema maxima crash-looped every process on the store, and
// `"pathway": "<path>.json"` opened any file, its 400 telling what the file system holds.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

let t: InjectServer;
let dir: string;
beforeAll(async () => {
  t = await startInjectServer();
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-planted-"));
  await writeFile(path.join(dir, "planted.json"), JSON.stringify({ ...loadPathway("bone-marrow"), id: "planted" }));
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

/** 50 steps × 50 categories × 200 keywords, 500 paths: the old schema's maxima (~7 MB as JSON). */
function schemaMaxPathway(): unknown {
  let n = 0;
  const steps = Array.from({ length: 50 }, (_, i) => ({
    id: `s${i}`,
    question: `Question ${i}?`,
    categories: Array.from({ length: 50 }, (_, j) => ({ id: `c${j}`, label: `C${j}`, keywords: Array.from({ length: 200 }, () => `keyword ${n++}`) })),
  }));
  return { id: "huge", title: "Huge", steps, paths: Array.from({ length: 500 }, (_, p) => ({ id: `p${p}`, outcome: "o", sequence: { s0: `c${p % 50}` } })) };
}

describe("hostile pathways over HTTP", () => {
  it("the schema-max pathway posted with respond-async is a 400, never a 202, and the server keeps answering", async () => {
    const huge = schemaMaxPathway();
    expect(JSON.stringify(huge).length).toBeGreaterThan(7_000_000);
    const res = await t.request({ method: "POST", url: "/diagnose", json: { question: "q", pathway: huge }, headers: { prefer: "respond-async" } });
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/at most 20|<=20/);
    expect((await t.request({ url: "/healthz", key: null })).status).toBe(200);
  });

  it.each([
    ["an absolute path of a planted pathway file", () => path.join(dir, "planted.json")],
    ["package.json", () => "package.json"],
    ["a path up the tree", () => "../../../../etc/x.json"],
  ])("%s as `pathway` is a 400 that reveals nothing of the file system", async (_name, ref) => {
    const res = await t.request({ method: "POST", url: "/diagnose", json: { question: "q", pathway: ref() } });
    expect(res.status).toBe(400);
    for (const leak of [dir, process.cwd(), "ENOENT", "planted", "Unexpected token", "\"steps\""]) expect(res.text).not.toContain(leak);
  });
});
