import { describe, expect, it } from "vitest";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { smallPng } from "../../../src/scripted/image-bytes.js";
import type { ScriptedRequest, Scenario } from "../../../src/scripted/scripted-openai-server.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

/** MEDMMV_IMAGE_DETAIL reaches the wire per role, and usage counts the image bytes sent. */
const servers = useScriptedServers();

/** The scenario, with each agent's image parts' `detail` noted as it arrives. */
function noting(base: Scenario, seen: Map<string, Set<string>>): Scenario {
  const agents: Scenario["agents"] = {};
  for (const [name, script] of Object.entries(base.agents)) {
    agents[name] = (req: ScriptedRequest) => {
      for (const m of req.messages as Array<{ content: unknown }>)
        if (Array.isArray(m.content))
          for (const p of m.content as Array<{ type: string; image_url?: { detail?: string } }>)
            if (p.type === "image_url") (seen.get(name) ?? seen.set(name, new Set()).get(name)!).add(p.image_url?.detail ?? "(none)");
      return typeof script === "function" ? (script as (r: ScriptedRequest) => unknown)(req) : script;
    };
  }
  return { ...base, agents };
}

describe("image detail per role", () => {
  it("vision=high,executor=low: the image doctor's images go with detail high, the rollouts' with low; usage counts their bytes", async () => {
    const seen = new Map<string, Set<string>>();
    servers.model.setScenario(noting(clinicalScenario({}), seen));
    const base = chestPainCase("case-detail");
    const png = smallPng(16, 16);
    const c = await prepareCase(
      { id: base.id, question: base.question, notes: base.notes, options: base.options, images: [{ id: "ecg1", data: png.toString("base64") }] },
      { maxBytes: 5_000_000, maxPixels: 10_000_000, allowPath: false },
    );
    const cfg = servers.config({ MEDMMV_IMAGE_DETAIL: "vision=high,executor=low" });
    const { result } = await new Pipeline(cfg).run(c, pipelineOptions(cfg, { k: 2 }));
    expect(seen.get("image-doctor")).toEqual(new Set(["high"]));
    expect(seen.get("rollout")).toEqual(new Set(["low"]));
    // image-hd is a judge call: auto, so no detail is sent.
    expect(seen.get("image-hd")).toEqual(new Set(["(none)"]));
    const imageCalls = ["rollout", "image-doctor", "image-hd", "image-revise", "auto-repair"].reduce((n, a) => n + (result.usage.byAgent[a]?.calls ?? 0), 0);
    expect(result.usage.imageBytes).toBe(imageCalls * Buffer.from(c.images[0]!.data, "base64").length);
    expect(result.usage.byAgent["rollout"]?.imageBytes).toBe(2 * Buffer.from(c.images[0]!.data, "base64").length);
  });
});
