import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../support/scripted-openai-server.js";
import { clinicalScenario } from "../support/clinical-scenario.js";
import { DiagnosisResult } from "../../src/case/diagnosis-result.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = path.join(ROOT, "bin/medmmv.js");
const CASE = path.join(ROOT, "examples/chest-pain.json");

/** The CLI as a user runs it: a child process, environment only. */
function medmmv(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("OPENAI_") && !k.startsWith("MEDMMV_") && !k.startsWith("TAVILY_")));
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...clean, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

let model: ScriptedOpenAI;
beforeAll(async () => {
  model = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B"] }) });
});
afterAll(() => model.close());

describe("medmmv diagnose", () => {
  it("without an endpoint: one clear message naming the variables, exit code 2", async () => {
    const r = await medmmv(["diagnose", CASE]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/MEDMMV_MODEL/);
    expect(r.stderr).toMatch(/OPENAI_BASE_URL/);
    expect(model.stats().total).toBe(0);
  });

  it("a bad case file: exit code 2 with the problem and its JSON path", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-cli-"));
    const bad = path.join(dir, "bad.json");
    await import("node:fs/promises").then((fs) => fs.writeFile(bad, JSON.stringify({ question: "", options: { a: "x" } })));
    const r = await medmmv(["diagnose", bad], { OPENAI_BASE_URL: model.baseUrl, MEDMMV_MODEL: "m" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/question/);
  });

  it("pointed at an endpoint by environment alone, prints the JSON result and writes --out", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-cli-"));
    const out = path.join(dir, "result.json");
    const r = await medmmv(["diagnose", CASE, "--k", "3", "--max-repairs", "1", "--json", "--out", out], {
      OPENAI_BASE_URL: model.baseUrl,
      OPENAI_API_KEY: "k",
      MEDMMV_MODEL: "scripted",
    });
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.code).toBe(0);
    const printed = DiagnosisResult.parse(JSON.parse(r.stdout));
    const written = DiagnosisResult.parse(JSON.parse(await readFile(out, "utf8")));
    expect(written).toEqual(printed);
    expect(printed.stability.rolloutAnswers).toHaveLength(3);
    expect(printed.provenance.config.maxRepairs).toBe(1);
    expect(printed.answer?.option).toBe("B");

    // The audit report of that result: one self-contained HTML file, nothing fetched.
    const html = path.join(dir, "report.html");
    const rep = await medmmv(["report", out, "-o", html]);
    expect(rep.code).toBe(0);
    const page = await readFile(html, "utf8");
    expect(page).toMatch(/^<!doctype html>/i);
    expect(page).toContain(printed.caseId);
    expect(page).not.toMatch(/<script[^>]+src=/i);
    expect(page).not.toMatch(/<link[^>]+href="https?:/i);
    const missing = await medmmv(["report", "no-such-case-or-file", "-o", html], { MEDMMV_DATA_DIR: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/neither a file nor a case id/);
  });

  it("demo runs the bundled cases against the in-process scripted servers and writes their offline audit views", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-demo-"));
    const out = path.join(dir, "demo.json");
    const r = await medmmv(["demo", "--out", out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/SCRIPTED/);
    expect(r.stdout).toMatch(/Candidates/);
    const result = DiagnosisResult.parse(JSON.parse(await readFile(out, "utf8")));
    expect(result.status).toBe("completed");
    expect(result.provenance.search?.enabled).toBe(true);
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
      [path.join(dir, "demo-report-community-pneumonia.html"), path.join(dir, "demo-community-pneumonia.json")],
      [path.join(dir, "demo-report-bone-marrow.html"), path.join(dir, "demo-bone-marrow.json")],
    ] as const) {
      expect(r.stdout).toContain(`Audit view (opens offline in a browser): ${report}`);
      const html = await readFile(report, "utf8");
      expect(html).toContain('<script id="medmmv-data" type="application/json">');
      expect(html).toContain('"executor":"scripted-demo"');
      expect(DiagnosisResult.parse(JSON.parse(await readFile(json, "utf8"))).status).toBe("completed");
    }
  });
});
