import { describe, expect, it } from "vitest";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { smallPng } from "../../../src/scripted/image-bytes.js";
import { scriptedImageTokens, type ScriptedRequest, type Scenario } from "../../../src/scripted/scripted-openai-server.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

/** MEDMMV_IMAGE_DETAIL reaches the wire per role, and usage counts the image bytes sent. */
const servers = useScriptedServers();

/** The scenario, with each agent's image parts' `detail` noted as it arrives. */
function noting(base: Scenario, seen: Map<string, Set<string>>, sent: Map<string, number> = new Map()): Scenario {
  const agents: Scenario["agents"] = {};
  for (const [name, script] of Object.entries(base.agents)) {
    agents[name] = (req: ScriptedRequest) => {
      for (const m of req.messages as Array<{ content: unknown }>)
        if (Array.isArray(m.content))
          for (const p of m.content as Array<{ type: string; image_url?: { detail?: string } }>)
            if (p.type === "image_url") {
              (seen.get(name) ?? seen.set(name, new Set()).get(name)!).add(p.image_url?.detail ?? "(none)");
              // The bytes on the wire: the copy made for the model (re-encoded at its size), not the stored original.
              const url = (p.image_url as { url?: string } | undefined)?.url ?? "";
              sent.set(name, (sent.get(name) ?? 0) + Buffer.from(url.slice(url.indexOf(",") + 1), "base64").length);
            }
      return typeof script === "function" ? (script as (r: ScriptedRequest) => unknown)(req) : script;
    };
  }
  return { ...base, agents };
}

describe("image detail per role", () => {
  it("vision=high,executor=low: the image doctor's images go with detail high, the rollouts' with low; usage counts their bytes", async () => {
    const seen = new Map<string, Set<string>>();
    const sent = new Map<string, number>();
    servers.model.setScenario(noting(clinicalScenario({}), seen, sent));
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
    const onWire = [...sent.values()].reduce((a, b) => a + b, 0);
    expect(onWire).toBeGreaterThan(0);
    expect(result.usage.imageBytes).toBe(onWire);
    expect(result.usage.byAgent["rollout"]?.imageBytes).toBe(sent.get("rollout"));
  });

  it("counts the image tokens a provider states (prompt_tokens_details.image_tokens), per agent and per case; none where it states none", async () => {
    const seen = new Map<string, Set<string>>();
    servers.model.setScenario(noting(clinicalScenario({}), seen));
    const base = chestPainCase("case-image-tokens");
    const c = await prepareCase(
      { id: base.id, question: base.question, notes: base.notes, options: base.options, images: [{ id: "ecg1", data: smallPng(16, 16).toString("base64") }] },
      { maxBytes: 5_000_000, maxPixels: 10_000_000, allowPath: false },
    );
    const cfg = servers.config({ MEDMMV_IMAGE_DETAIL: "vision=high,executor=low" });
    servers.model.setStatesImageTokens(true);
    try {
      const { result } = await new Pipeline(cfg).run(c, pipelineOptions(cfg, { k: 2 }));
      // One image a call: 2 rollouts at low, one image-doctor call at high, image-hd at auto (stated as high).
      expect(result.usage.byAgent["rollout"]?.imageTokens).toBe(2 * scriptedImageTokens("low"));
      expect(result.usage.byAgent["image-doctor"]?.imageTokens).toBe(scriptedImageTokens("high"));
      const byAgent = Object.values(result.usage.byAgent).reduce((n, u) => n + (u.imageTokens ?? 0), 0);
      expect(result.usage.imageTokens).toBe(byAgent);
      expect(result.usage.imageTokens).toBeGreaterThanOrEqual(2 * 85 + 765);
      expect(result.usage.byAgent["text-doctor"]?.imageTokens).toBe(0);
    } finally {
      servers.model.setStatesImageTokens(false);
    }
    const { result: silent } = await new Pipeline(cfg).run({ ...c, id: "case-image-tokens-2" }, pipelineOptions(cfg, { k: 1 }));
    expect(silent.usage.imageTokens).toBe(0);
    expect(silent.usage.imageBytes).toBeGreaterThan(0);
  });
});
