import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";
import { useTempDir } from "../eval/datasets/dataset-kit.js";
import { medmmvCli } from "../support/medmmv-cli.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CASE = path.join(ROOT, "examples/chest-pain.json");

const medmmv = (args: string[], env: Record<string, string> = {}) => medmmvCli(args, env);
const tmp = useTempDir("medmmv-cli-");

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
    const bad = path.join(tmp(), "bad.json");
    await writeFile(bad, JSON.stringify({ question: "", options: { a: "x" } }));
    const r = await medmmv(["diagnose", bad], { OPENAI_BASE_URL: model.baseUrl, MEDMMV_MODEL: "m" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/question/);
  });

  it("pointed at an endpoint by environment alone, prints the JSON result and writes --out", async () => {
    const dir = tmp();
    const out = path.join(dir, "result.json");
    const r = await medmmv(["diagnose", CASE, "--k", "3", "--max-repairs", "1", "--json", "--out", out], {
      OPENAI_BASE_URL: model.baseUrl,
      OPENAI_API_KEY: "k",
      MEDMMV_MODEL: "scripted",
    });
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.code).toBe(0);
    const printed = DiagnosisResult.parse(JSON.parse(r.stdout));
    const file = JSON.parse(await readFile(out, "utf8")) as { fullEvidenceGraph?: { nodes: Array<{ key: string }> } };
    const written = DiagnosisResult.parse(file);
    expect(written).toEqual(printed);
    // The file carries the full graph E, so its offline report shows everything the agents found.
    const full = new Set(file.fullEvidenceGraph!.nodes.map((n) => n.key));
    expect(full.size).toBeGreaterThanOrEqual(printed.evidenceGraph?.nodes.length ?? 0);
    for (const n of printed.evidenceGraph?.nodes ?? []) expect(full.has(n.key)).toBe(true);
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
});
