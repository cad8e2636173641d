// app.inject; the scripted model server (a real loopback port) sees every prompt, which is the point.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { Scenario, ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { realBundle } from "../../core/intake/fhir/real-material.js";
import { FORBIDDEN, folded, variantsBundle } from "../../core/intake/fhir/written-variants.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

/** Every prompt the model server is sent, as text. */
const prompts: string[] = [];
function recording(base: Scenario): Scenario {
  const agents: Scenario["agents"] = {};
  for (const [agent, script] of Object.entries(base.agents)) {
    agents[agent] = (req: ScriptedRequest) => {
      prompts.push(req.text);
      return typeof script === "function" ? (script as (r: ScriptedRequest) => unknown)(req) : script;
    };
  }
  return { ...base, agents };
}

let t: InjectServer;
beforeAll(async () => {
  t = await startInjectServer({ scenario: recording(clinicalScenario({ rolloutAnswers: ["B", "B", "B"] })) });
});
afterAll(() => t.close());

async function diagnose(bundle: unknown): Promise<{ status: number; text: string }> {
  const res = await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json" }, body: JSON.stringify(bundle) });
  return { status: res.status, text: await res.text() };
}

describe("identifiers that reach no prompt, result or log", () => {
  it("the Dutch IPS's narrative name (not stated in its Patient)", async () => {
    const from = prompts.length;
    const logFrom = t.logs.text().length;
    const { status, text } = await diagnose(realBundle("ips/NL_Curavista_01.json"));
    expect(status).toBe(201);
    const sent = prompts.slice(from);
    expect(sent.length).toBeGreaterThan(5);
    expect(sent.some((p) => p.includes("Patiënt: H. [name] [name]"))).toBe(true); // the narrative did reach the model, scrubbed
    for (const where of [...sent, text, t.logs.text().slice(logFrom)]) expect(folded(where)).not.toMatch(/henc|melders/);
  });

  it("none of the eighteen written variants of what the Patient states", async () => {
    const from = prompts.length;
    const logFrom = t.logs.text().length;
    const { status, text } = await diagnose(variantsBundle());
    expect(status).toBe(201);
    const sent = prompts.slice(from);
    expect(sent.some((p) => p.includes("Cough for three days"))).toBe(true);
    for (const where of [...sent, text, t.logs.text().slice(logFrom)]) {
      const f = folded(where);
      for (const term of FORBIDDEN) expect(f, term).not.toContain(term);
    }
  });
});
