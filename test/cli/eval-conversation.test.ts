import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { medmmvCli } from "../support/medmmv-cli.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { fakeImages } from "../eval/eval-fixtures.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const FIXTURES = path.join(ROOT, "test/eval/conversation/fixtures");

const medmmv = medmmvCli;

let model: ScriptedOpenAI;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  const base = clinicalScenario();
  // A model that answers every turn "Hard to say.": every label is no-match. ("I cannot tell" would be an inconclusive diagnosis.)
  model = await startScriptedOpenAI({ scenario: { ...base, agents: { ...base.agents, "turn-answer": { step: null, answer: "Hard to say.", claims: ["Nothing is certain"] } } } });
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-eval-conv-cli-"));
  await fakeImages(path.join(dir, "images"), ["test1.jpeg", "test2.jpeg", "test3.jpeg"]);
  env = { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_LOG_LEVEL: "silent", MEDMMV_CACHE: "off" };
});
afterAll(async () => {
  await model.close();
  await rm(dir, { recursive: true, force: true });
});

describe("medmmv eval --dataset drllava", () => {
  it("runs the orders asked for, writes summary.json conversation metrics, and eval report reads them", async () => {
    const out = path.join(dir, "cot");
    const r = await medmmv(["eval", "--dataset", "drllava", "--input", path.join(FIXTURES, "drllava-synthetic.json"), "--images", path.join(dir, "images"), "--method", "cot", "--order", "si,df", "--out", out, "--json"], env);
    expect(r.stderr).toContain("results in");
    const summary = JSON.parse(r.stdout) as { items: number; conversation: Record<string, { aQ: number; aC: number; aD: number; hCC: number }> };
    expect(summary.items).toBe(6);
    // No answer is labelled, so nothing is right and nothing conflicts among labels; in the reference's
    // H_cc every such conversation is off the pathway.
    expect(summary.conversation).toEqual({
      si: { aQ: 0, aC: 0, aD: 0, hCC: 0, hCCReference: 1, conversations: 3, diagnosisAsked: 3, questions: 15, failed: 0, goldUnlabelled: 0 },
      df: { aQ: 0, aC: 0, aD: 0, hCC: 0, hCCReference: 1, conversations: 3, diagnosisAsked: 3, questions: 15, failed: 0, goldUnlabelled: 0 },
    });
    const rep = await medmmv(["eval", "report", out], env);
    expect(rep.code).toBe(0);
    expect(rep.stdout).toMatch(/\| A_Q si \(%\)\s*\|\s*0\.0 \|/);
  });

  it("a bad --order is refused, and a method that cannot converse is a usage error", async () => {
    const bad = await medmmv(["eval", "--dataset", "drllava", "--input", "x.json", "--order", "zz", "--out", path.join(dir, "x")], env);
    // commander refuses a bad option value itself (its exit code, as for every other flag).
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/expected a comma-separated list of si, df, ii/);
    const sc = await medmmv(["eval", "--dataset", "conversation", "--input", "x.jsonl", "--method", "self-consistency", "--out", path.join(dir, "y")], env);
    expect(sc.code).toBe(2);
    expect(sc.stderr).toMatch(/does not run conversations; use medmmv or cot/);
  });
});
