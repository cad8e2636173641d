import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { medmmvCli } from "../support/medmmv-cli.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { AML_ANSWERS, AML_LABELS, MARROW_NOTES, turnsScenario } from "../server/conversation/turns-scenario.js";

const medmmv = medmmvCli;

let model: ScriptedOpenAI;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  model = await startScriptedOpenAI({ scenario: turnsScenario() });
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-chat-"));
  await writeFile(path.join(dir, "case.json"), JSON.stringify({ question: "What is the diagnosis of this bone-marrow patch?", notes: MARROW_NOTES }));
  env = { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_LOG_LEVEL: "silent", MEDMMV_CACHE: "off" };
});
afterAll(async () => {
  await model.close();
  await rm(dir, { recursive: true, force: true });
});

interface TurnLine {
  type: string;
  turn: number;
  step: string | null;
  category: string | null;
  contextConflict: boolean;
}

describe("medmmv chat", () => {
  it("--script answers each question in turn, labelled on --pathway, and flags the contradicting turn", async () => {
    const script = path.join(dir, "questions.txt");
    await writeFile(script, ["# a consistent AML walk, then a contradiction", ...Object.keys(AML_ANSWERS), "[diagnosis] What is the diagnosis?"].join("\n"));
    const r = await medmmv(["chat", path.join(dir, "case.json"), "--pathway", "bone-marrow", "--script", script, "--k", "2", "--json"], env);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as TurnLine);
    expect(lines[0]!.type).toBe("result");
    expect(lines.slice(1).map((t) => [t.turn, t.step, t.category, t.contextConflict])).toEqual([...AML_LABELS, [7, "diagnosis", "aml", true]]);
  });

  it("reads questions from stdin without --script, and prints readable turns", async () => {
    const r = await medmmv(["chat", path.join(dir, "case.json"), "--pathway", "bone-marrow", "--k", "1"], env, "What is the diagnosis?\n\n[nonsense] Which cell type is proliferating?\nWhich cell type is proliferating?\n");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("(1) [diagnosis: aml] Acute myeloid leukemia.");
    expect(r.stdout).toContain("(2) [proliferation: blasts] Myeloblasts are proliferating");
    expect(r.stderr).toMatch(/step "nonsense" is not a step of pathway "bone-marrow"/);
  });

  it("an unknown pathway is a usage error (exit 2) before any model call", async () => {
    model.reset();
    const r = await medmmv(["chat", path.join(dir, "case.json"), "--pathway", "lung"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown pathway "lung"; known pathways: bone-marrow/);
    expect(model.stats().total).toBe(0);
  });
});
