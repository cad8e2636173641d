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

async function fullGraph(slow: Fault[]) {
  servers.model.clearFaults();
  for (const f of slow) servers.model.addFault(f);
  const image = await prepareImage({ id: "img1", data: smallPng().toString("base64") }, { maxBytes: 1e6, maxPixels: 1e6, allowPath: false });
  const cfg = servers.config();
  const run = await new Pipeline(cfg).run({ ...chestPainCase("order-case"), images: [image] }, pipelineOptions(cfg, { k: 1 }));
  expect(run.result.status).toBe("completed");
  // Retrieval times differ between runs by nature; everything else must not.
  return JSON.stringify(run.fullEvidenceGraph).replace(/"retrievedAt":"[^"]*"/g, '"retrievedAt":"…"');
}

describe("evidence graph order", () => {
  it("does not depend on which agent or search finishes first", async () => {
    const textLast = await fullGraph([{ kind: "latency", ms: 400, agent: "text-doctor" }, { kind: "latency", ms: 400, agent: "web-search-analysis", callIndex: 0 }]);
    const imageLast = await fullGraph([{ kind: "latency", ms: 400, agent: "image-doctor" }, { kind: "latency", ms: 400, agent: "web-search-analysis", callIndex: 1 }]);
    expect(textLast).toContain("image-doctor");
    expect(textLast).toContain("web-search");
    expect(imageLast).toBe(textLast);
  });
});
