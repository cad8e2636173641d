import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../src/case/diagnosis-result.js";
import { EvidenceGraph } from "../../src/evidence/evidence-graph.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function demo(out: string, env: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("OPENAI_") && !k.startsWith("MEDMMV_") && !k.startsWith("TAVILY_") && k !== "DATABASE_URL"));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "demo", "--out", out], { cwd: ROOT, env: { ...clean, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-demo-search-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("medmmv demo's literature search", () => {
  it("with nothing configured: the bundled corpus, searched offline in a throwaway store", async () => {
    const out = path.join(dir, "local.json");
    const dataDir = path.join(dir, "user-data");
    // An Azure key left exported in the user's shell is not the demo's configuration: it
    // neither fails the demo's config nor routes the scripted roles to Azure.
    const r = await demo(out, { MEDMMV_DATA_DIR: dataDir, AZURE_OPENAI_API_KEY: "users-azure-key" });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/web search on \(local corpus, offline\)/);
    const result = DiagnosisResult.parse(JSON.parse(await readFile(out, "utf8")));
    expect(result.provenance.search).toMatchObject({ provider: "local", enabled: true });
    expect(result.usage.searchCalls).toBeGreaterThan(0);
    // The pathway case: its literature is the bundled haematology corpus, and the rollout
    // that left the pathway was caught and repaired.
    expect(r.stdout).toContain(path.join(dir, "local-bone-marrow.json"));
    const marrow = DiagnosisResult.parse(JSON.parse(await readFile(path.join(dir, "local-bone-marrow.json"), "utf8")));
    expect(marrow.answer?.option).toBe("A");
    const urls = EvidenceGraph.import(marrow.evidenceGraph)
      .nodes()
      .flatMap((n) => n.sources.flatMap((s) => (s.url ? [s.url] : [])));
    expect(urls.filter((u) => u.startsWith("corpus://haematology/")).length).toBeGreaterThan(0);
    expect(marrow.hallucinations).toEqual([expect.objectContaining({ stage: "reasoning", resolved: true, issue: expect.stringMatching(/^context-conflict:/) })]);
    // The demo's store was its own: nothing was written to the user's data directory.
    await expect(readFile(path.join(dataDir, "medmmv.sqlite"))).rejects.toMatchObject({ code: "ENOENT" });
  }, 120_000);

  it("with a Tavily key given: the scripted Tavily server, as before", async () => {
    const out = path.join(dir, "tavily.json");
    const r = await demo(out, { TAVILY_API_KEY: "user-key" });
    expect(r.code, r.stderr).toBe(0);
    const result = DiagnosisResult.parse(JSON.parse(await readFile(out, "utf8")));
    expect(result.provenance.search).toMatchObject({ provider: "tavily", enabled: true });
  }, 120_000);
});
