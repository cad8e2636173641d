import { describe, expect, it } from "vitest";
import type { ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { caseAgents } from "../../../src/scripted/scenarios/case-script.js";
import { chestPainScript } from "../../../src/scripted/scenarios/chest-pain.js";
import { DEMO_SCRIPTS } from "../../../src/scripted/scenarios/demo-scenario.js";

const analysis = caseAgents(chestPainScript)["web-search-analysis"] as (req: ScriptedRequest) => { relation: string | null; knowledge: Array<{ label: string; resultIndex: number }> };
const prompt = (results: string) =>
  `medmmv-agent: web-search-analysis\n<<<EVIDENCE\nA: ST elevation in leads II, III and aVF\nB: reciprocal ST depression in aVL\nEVIDENCE>>>\n<<<UNTRUSTED_SEARCH_CONTENT\n${results}\nUNTRUSTED_SEARCH_CONTENT>>>`;
const req = (text: string) => ({ text }) as ScriptedRequest;

describe("scripted web-search analysis", () => {
  it("reports the scripted literature only when its source is among the results shown, at that result's index", () => {
    const ours = chestPainScript.searches[0]!.results[0]!;
    const out = analysis(req(prompt(`[result 0] Something else (https://other.example/a)\nunrelated\n\n[result 1] ${ours.title} (${ours.url})\n${ours.content}`)));
    expect(out.relation).toBe("associated-with");
    expect(out.knowledge.map((k) => k.resultIndex)).toEqual([1, 1]);
    expect(out.knowledge[0]!.label).toMatch(/inferior transmural ischaemia/);
  });

  it("says nothing when other results came back (another provider, another corpus)", () => {
    expect(analysis(req(prompt("[result 0] A local passage (corpus://demo/7)\nsome text")))).toEqual({ relation: null, relationResultIndex: null, knowledge: [], suspiciousContent: false });
  });
});

describe("caseAgents refuses a script whose verdicts would depend on its order", () => {
  const { ecg, risk } = chestPainScript.paths;

  it("throws when two claims share a text but not their evidence or flaw", () => {
    const flawed = { ...risk!.steps[1]!.claims[0]!, flaw: { verdict: "contradicted" as const, issue: "x", instruction: "y", severity: "LOW" as const } };
    const paths = { ...chestPainScript.paths, risk: { ...risk!, steps: [risk!.steps[0]!, { ...risk!.steps[1]!, claims: [flawed, risk!.steps[1]!.claims[1]!] }] } };
    expect(() => caseAgents({ ...chestPainScript, paths })).toThrow(/two claims "ST elevation is present in leads II, III and aVF"/);
    const moreEvidence = { ...risk!.steps[1]!.claims[0]!, evidence: ["ste", "recip"] };
    const paths2 = { ...chestPainScript.paths, risk: { ...risk!, steps: [risk!.steps[0]!, { ...risk!.steps[1]!, claims: [moreEvidence, risk!.steps[1]!.claims[1]!] }] } };
    expect(() => caseAgents({ ...chestPainScript, paths: paths2 })).toThrow(/different evidence or flaw/);
  });

  it("throws when two paths make the same claims", () => {
    expect(() => caseAgents({ ...chestPainScript, paths: { ...chestPainScript.paths, ecgAgain: { ...ecg!, answer: "A" } } })).toThrow(/paths ecg and ecgAgain make the same claims/);
  });

  it("accepts the bundled scripts", () => {
    for (const s of DEMO_SCRIPTS) expect(() => caseAgents(s)).not.toThrow();
  });
});
