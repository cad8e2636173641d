// app.inject; the scripted model server (a real loopback port) sees every prompt, which is the point.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { Scenario, ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { realBundle } from "../../core/intake/fhir/real-material.js";
import { FORBIDDEN, folded, variantsBundle } from "../../core/intake/fhir/written-variants.js";
import { largeBundleText } from "../../core/intake/fhir/large-record.js";
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
    expect(sent.some((p) => p.includes("Patiënt: [name]. Id: 1343"))).toBe(true); // the narrative did reach the model, scrubbed
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

describe("/healthz while a 10 MB record is read", () => {
  it("answers every probe in a small share of the time the intake takes (a blocking intake makes a probe wait all of it)", async () => {
    const body = largeBundleText(10 * 1024 * 1024);
    let settled = false;
    const started = performance.now();
    const post = t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json", prefer: "respond-async" }, body }).finally(() => (settled = true));
    const latencies: number[] = [];
    // One probe after another, each timed from its send to its answer, while the record is read.
    while (!settled) {
      // A client's next request arrives as an I/O event; an injected one would otherwise run on microtasks alone and starve the intake.
      await new Promise((r) => setImmediate(r));
      const sent = performance.now();
      const res = await t.api("/healthz", { key: null });
      expect(res.status).toBe(200);
      if (!settled) latencies.push(performance.now() - sent);
    }
    const res = await post;
    const took = performance.now() - started;
    expect(res.status).toBe(202);
    expect(latencies.length).toBeGreaterThanOrEqual(3);
    // Relative, so a loaded machine slows both alike; the body's JSON parse (one block, ~40 ms for 10 MB on an idle core) is inside every bound.
    expect(Math.max(...latencies)).toBeLessThan(took / 3);
    console.info(`10 MB intake: ${took.toFixed(0)} ms; ${latencies.length} /healthz probes, longest ${Math.max(...latencies).toFixed(0)} ms, median ${latencies.sort((a, b) => a - b)[Math.floor(latencies.length / 2)]!.toFixed(0)} ms`);
  }, 120_000);
});
