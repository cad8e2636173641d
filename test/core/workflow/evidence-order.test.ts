import { describe, expect, it } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { ScriptFn, ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { smallPng } from "../../../src/scripted/image-bytes.js";
import { until } from "../../support/until.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { prepareImage } from "../../../src/core/intake/images.js";
import { SCRIPTED_MODEL_PROFILES } from "../../../src/scripted/scripted-config.js";

/**
 * The evidence graph is the same whichever evidence agent or search answers first: its
 * order is the order of every later prompt, so a graph that followed the timing would make
 * prompts (and the response cache's keys) depend on the machine's speed that day.
 *
 * The race is forced by conditions, not delays: the held agent's reply waits until the
 * pipeline has reported the other doctor, and the held search analysis waits until the
 * server has answered all the others. So each order is certain however slow the machine is.
 */
const servers = useScriptedServers({ search: true });
const base = clinicalScenario();

/** One run with `heldDoctor` answering last, and search analysis number `heldAnalysis` answering last. */
async function fullGraph(heldDoctor: "text-doctor" | "image-doctor", heldAnalysis: number) {
  const otherDoctor = heldDoctor === "text-doctor" ? "image-doctor" : "text-doctor";
  const doctors: string[] = [];
  const answer = (agent: string) => base.agents[agent] as ScriptFn;
  servers.model.setScenario({
    ...base,
    agents: {
      ...base.agents,
      [heldDoctor]: async (req: ScriptedRequest) => {
        await until(() => (doctors.includes(otherDoctor) ? true : undefined), 30_000, `${otherDoctor} reported`);
        return answer(heldDoctor)(req);
      },
      "web-search-analysis": async (req: ScriptedRequest) => {
        if (req.callIndex === heldAnalysis) {
          const others = () => servers.model.stats().log.filter((l) => l.agent === "web-search-analysis" && l.callIndex !== heldAnalysis);
          // Every other pair has been asked, and answered.
          await until(() => (others().length > 0 && others().every((l) => l.end !== null) && others().length + 1 === plannedPairs() ? true : undefined), 30_000, "the other analyses answered");
        }
        return answer("web-search-analysis")(req);
      },
    },
  });
  // Per-agent call indices (and the search count) from 0 again, so `heldAnalysis` means the same pair in each run.
  servers.model.reset();
  servers.search.reset();
  const image = await prepareImage({ id: "img1", data: smallPng().toString("base64") }, { maxBytes: 1e6, maxPixels: 1e6, allowPath: false });
  // The scripted model's profile is stated, so its first calls are not held back one at a time
  // (docs/models.md): the race below needs both doctors' first calls in flight together.
  const cfg = servers.config({ MEDMMV_MODEL_PROFILES: SCRIPTED_MODEL_PROFILES });
  const emit = (type: string, data: Record<string, unknown>) => {
    if (type === "evidence" && (data.agent === "text-doctor" || data.agent === "image-doctor")) doctors.push(data.agent);
  };
  const run = await new Pipeline(cfg).run({ ...chestPainCase("order-case"), images: [image] }, pipelineOptions(cfg, { k: 1 }), { emit });
  expect(run.result.status).toBe("completed");
  const analyses = servers.model
    .stats()
    .log.filter((l) => l.agent === "web-search-analysis")
    .sort((x, y) => (x.end ?? Infinity) - (y.end ?? Infinity))
    .map((l) => l.callIndex);
  // Retrieval times differ between runs by nature; everything else must not.
  return { graph: JSON.stringify(run.fullEvidenceGraph).replace(/"retrievedAt":"[^"]*"/g, '"retrievedAt":"…"'), doctors, analyses };
}

/** How many search pairs the planner asked for: one analysis each. */
function plannedPairs(): number {
  return servers.search.stats().total;
}

describe("evidence graph order", () => {
  it("does not depend on which agent or search finishes first", async () => {
    const textLast = await fullGraph("text-doctor", 0);
    const imageLast = await fullGraph("image-doctor", 1);
    // The race went both ways: otherwise the comparison below would prove nothing.
    expect(textLast.doctors).toEqual(["image-doctor", "text-doctor"]);
    expect(imageLast.doctors).toEqual(["text-doctor", "image-doctor"]);
    expect(textLast.analyses.length).toBeGreaterThan(1);
    expect(textLast.analyses.at(-1)).toBe(0);
    expect(imageLast.analyses.at(-1)).toBe(1);
    expect(textLast.graph).toContain("image-doctor");
    expect(textLast.graph).toContain("web-search");
    expect(imageLast.graph).toBe(textLast.graph);
  });
});
