/**
 * The scripted model and search answers behind `medmmv demo` and `medmmv serve --demo`:
 * each bundled example case has a script written for it (chest-pain.ts,
 * community-pneumonia.ts, bone-marrow.ts); a case no script knows (one a user submits to the demo service)
 * gets the generic clinical scenario, so the demo service still answers it — scripted.
 */
import type { Scenario, ScriptedRequest } from "../scripted-openai-server.js";
import { defaultTavilyResults, type TavilyRequest, type TavilyResult } from "../scripted-tavily-server.js";
import { caseBlock, clinicalScenario } from "../clinical-scenario.js";
import { caseAgents, caseSearchResults, unscriptedTurn, type CaseScript } from "./case-script.js";
import { chestPainScript } from "./chest-pain.js";
import { communityPneumoniaScript } from "./community-pneumonia.js";
import { boneMarrowScript } from "./bone-marrow.js";

export const DEMO_SCRIPTS: readonly CaseScript[] = [chestPainScript, communityPneumoniaScript, boneMarrowScript];

export function demoScenario(): Scenario {
  const scripted = DEMO_SCRIPTS.map((s) => ({ s, agents: caseAgents(s) }));
  const generic: Scenario["agents"] = { ...clinicalScenario({ coherence: {} }).agents, "turn-answer": unscriptedTurn };
  const route = (agent: string) => (req: ScriptedRequest) => {
    const block = caseBlock(req.text);
    const hit = scripted.find((x) => x.s.matches(block));
    // An agent a case's script does not write for (the reply composer) answers generically.
    const script = hit ? (hit.agents[agent] ?? generic[agent]) : generic[agent];
    if (typeof script !== "function") throw new Error(`no demo script for agent ${agent}`);
    return script(req);
  };
  // Every agent the generic scenario or a script answers, so a new one cannot miss the router.
  const agents = new Set([...Object.keys(generic), ...scripted.flatMap((x) => Object.keys(x.agents))]);
  return { name: "demo", agents: Object.fromEntries([...agents].map((a) => [a, route(a)])) };
}

/** Search results for the demo: the scripts' literature for their queries, generic hits otherwise. */
export function demoSearchResults(req: TavilyRequest): TavilyResult[] {
  for (const s of DEMO_SCRIPTS) {
    const hit = caseSearchResults(s, req);
    if (hit) return hit;
  }
  return defaultTavilyResults(req.query);
}
