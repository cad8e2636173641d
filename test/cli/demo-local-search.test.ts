import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";
import { EvidenceGraph } from "../../src/core/evidence/evidence-graph.js";
import { useTempDir } from "../eval/datasets/dataset-kit.js";
import { medmmvCli } from "../support/medmmv-cli.js";

/** `medmmv demo --out OUT`: three full cases, so more time than a single-case command. */
const demo = (out: string, env: Record<string, string>) => medmmvCli(["demo", "--out", out], env, "", undefined, { timeoutMs: 110_000 });

const tmp = useTempDir("medmmv-demo-search-");

describe("medmmv demo's literature search", () => {
  it("with nothing configured: the bundled corpus, searched offline in a throwaway store", async () => {
    const dir = tmp();
    const out = path.join(dir, "local.json");
    const dataDir = path.join(dir, "user-data");
    // An Azure key left exported in the user's shell is not the demo's configuration: it
    // neither fails the demo's config nor routes the scripted roles to Azure.
    const r = await demo(out, { MEDMMV_DATA_DIR: dataDir, AZURE_OPENAI_API_KEY: "users-azure-key" });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/SCRIPTED/);
    expect(r.stdout).toMatch(/Candidates/);
    expect(r.stdout).toMatch(/web search on \(local corpus, offline\)/);
    const result = DiagnosisResult.parse(JSON.parse(await readFile(out, "utf8")));
    expect(result.status).toBe("completed");
    expect(result.provenance.search).toMatchObject({ provider: "local", enabled: true });
    expect(result.usage.searchCalls).toBeGreaterThan(0);
    expect(result.usage.llmCalls).toBeGreaterThan(10);
    // The summary reads like the case, not like filler.
    expect(r.stdout).toContain("ST elevation in II, III and aVF with reciprocal depression in aVL");
    expect(r.stdout).toMatch(/repaired path-\d attempt 1 \[knowledge\/MEDIUM\] The ST elevation is diffuse across the leads/);
    expect(r.stdout).not.toMatch(/Together the findings point to|consistent with B/);
    // The pathway case: the rollout that left the bone-marrow pathway was caught by its own check and repaired.
    expect(r.stdout).toMatch(/repaired path-\d attempt 1 \[reasoning\/HIGH\] image-quality = low, .*diagnosis = aml/);
    // The audit views: printed, written, self-contained, and carrying the scripted provenance the banner reads.
    for (const [report, json] of [
      [path.join(dir, "demo-report.html"), out],
      [path.join(dir, "demo-report-community-pneumonia.html"), path.join(dir, "local-community-pneumonia.json")],
      [path.join(dir, "demo-report-bone-marrow.html"), path.join(dir, "local-bone-marrow.json")],
    ] as const) {
      expect(r.stdout).toContain(`Audit view (opens offline in a browser): ${report}`);
      const html = await readFile(report, "utf8");
      expect(html).toContain('<script id="medmmv-data" type="application/json">');
      expect(html).toContain('"executor":"scripted-demo"');
      expect(DiagnosisResult.parse(JSON.parse(await readFile(json, "utf8"))).status).toBe("completed");
    }
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
    const out = path.join(tmp(), "tavily.json");
    const r = await demo(out, { TAVILY_API_KEY: "user-key" });
    expect(r.code, r.stderr).toBe(0);
    const result = DiagnosisResult.parse(JSON.parse(await readFile(out, "utf8")));
    expect(result.provenance.search).toMatchObject({ provider: "tavily", enabled: true });
  }, 120_000);
});
