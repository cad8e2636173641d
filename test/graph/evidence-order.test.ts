import { describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { chestPainCase } from "../support/sample-cases.js";
import { smallPng } from "../support/image-bytes.js";
import { Pipeline, pipelineOptions } from "../../src/graph/pipeline.js";
import { prepareImage } from "../../src/case/images.js";
import type { Fault } from "../support/faults.js";

/**
 * The evidence graph is the same whichever evidence agent or search answers first: its
 * order is the order of every later prompt, so a graph that followed the timing would make
 * prompts (and the response cache's keys) depend on the machine's speed that day.
 */
const servers = useScriptedServers({ search: true });

/**
 * One run with the given agents slowed down. Besides the graph, it returns the order the
 * two doctors reported in, and the search analyses' call indices in the order they were
 * answered, so the test can check that the delays did reorder them.
 */
async function fullGraph(slow: Fault[]) {
  // Per-agent call indices from 0 again, so a fault's callIndex means the same call in each run.
  servers.model.reset();
  servers.model.clearFaults();
  for (const f of slow) servers.model.addFault(f);
  const image = await prepareImage({ id: "img1", data: smallPng().toString("base64") }, { maxBytes: 1e6, maxPixels: 1e6, allowPath: false });
  const cfg = servers.config();
  const doctors: string[] = [];
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

describe("evidence graph order", () => {
  it("does not depend on which agent or search finishes first", async () => {
    const textLast = await fullGraph([{ kind: "latency", ms: 400, agent: "text-doctor" }, { kind: "latency", ms: 400, agent: "web-search-analysis", callIndex: 0 }]);
    const imageLast = await fullGraph([{ kind: "latency", ms: 400, agent: "image-doctor" }, { kind: "latency", ms: 400, agent: "web-search-analysis", callIndex: 1 }]);
    // The delays did reorder the race: otherwise the comparison below would prove nothing.
    expect(textLast.doctors).toEqual(["image-doctor", "text-doctor"]);
    expect(imageLast.doctors).toEqual(["text-doctor", "image-doctor"]);
    expect(textLast.analyses.at(-1)).toBe(0);
    expect(imageLast.analyses.at(-1)).toBe(1);
    expect(textLast.graph).toContain("image-doctor");
    expect(textLast.graph).toContain("web-search");
    expect(imageLast.graph).toBe(textLast.graph);
  });
});
