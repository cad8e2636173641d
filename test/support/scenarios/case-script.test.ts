import { describe, expect, it } from "vitest";
import type { ScriptedRequest } from "../scripted-openai-server.js";
import { caseAgents } from "./case-script.js";
import { chestPainScript } from "./chest-pain.js";

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
