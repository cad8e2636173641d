import type { RunnableConfig } from "@langchain/core/runnables";
import { runTextDoctor } from "../../agents/text-doctor.js";
import { runImageDoctor } from "../../agents/image-doctor.js";
import { takesImages } from "../../agents/image-description.js";
import { runWebSearch } from "../../agents/web-search.js";
import { EvidenceGraph } from "../../evidence/evidence-graph.js";
import { renderEvidenceForPrompt } from "../../evidence/render-for-prompt.js";
import type { NewEvidenceNode } from "../../contracts/evidence.js";
import { describeError } from "../../contracts/errors.js";
import type { BranchFailure } from "../../contracts/diagnosis-result.js";
import { CallChain } from "../../llm/usage.js";
import { nodeCallContext, type WorkflowDeps } from "../run-context.js";
import type { EvidenceRecord, PipelineStateUpdate, PipelineStateValue } from "../state.js";

/**
 * Evidence construction: TextDoctor ∥ ImageDoctor, then WebSearch over pairs of their
 * facts. Runs in the same superstep as the rollouts, so the case's latency is the longer
 * of the two chains, not their sum. Each agent is its own branch: a failure is recorded
 * and the graph is built from what is left.
 */
export function buildEvidenceNode(deps: WorkflowDeps) {
  return async (state: PipelineStateValue, config: RunnableConfig): Promise<PipelineStateUpdate> => {
    const started = Date.now();
    const c = deps.images.hydrate(state.caseInput);
    const opts = state.options;
    const ctx = nodeCallContext(deps, config, c.id, 0);
    const emit = deps.hooks.emitter(config);
    const graph = new EvidenceGraph();
    const failures: BranchFailure[] = [];
    const record: Omit<EvidenceRecord, "graph" | "depth" | "usage"> = {
      failures,
      textDoctor: { accepted: 0, rejected: [] },
      imageChecks: [],
      search: {
        provider: deps.agents.search.name,
        enabled: deps.agents.search.enabled && !opts.ablations.noWebSearch,
        note: opts.ablations.noWebSearch ? "web search disabled by ablation (--no-web-search)" : deps.agents.search.note,
        pairsPlanned: 0,
        pairsSearched: 0,
      },
      untrusted: [],
    };
    const fail = (branch: string, err: unknown) => {
      const d = describeError(err);
      failures.push({ branch, ...d });
      emit("branch-failed", { branch, ...d });
    };

    // Nodes enter the graph in a fixed order (text, then image), not in the order the two
    // agents happen to finish: the graph's order is the order of every later prompt, and a
    // prompt that depends on timing is never served from the response cache.
    let textNodes: NewEvidenceNode[] = [];
    let imageNodes: NewEvidenceNode[] = [];
    const textChain = ctx.chain.fork();
    const imageChain = ctx.chain.fork();
    const text = opts.ablations.noTextDoctor
      ? Promise.resolve()
      : runTextDoctor(deps.agents, { ...ctx, chain: textChain }, c).then(
          (r) => {
            textNodes = r.nodes;
            record.textDoctor = { accepted: r.nodes.length, rejected: r.rejected };
            emit("evidence", { agent: "text-doctor", facts: r.nodes.length, rejectedQuotes: r.rejected.length });
          },
          (err) => fail("text-doctor", err),
        );
    // A vision model that takes no images has nothing to read: ImageDoctor does not run (provenance.imageInput and the answer's state say so).
    const image =
      opts.ablations.noImageDoctor || c.images.length === 0 || !takesImages(deps.agents.llm, "vision")
        ? Promise.resolve()
        : runImageDoctor(deps.agents, { ...ctx, chain: imageChain }, c, { checkFindings: !opts.ablations.noHd }).then(
            (r) => {
              imageNodes = r.nodes;
              record.imageChecks = r.checks;
              emit("evidence", { agent: "image-doctor", findings: r.nodes.length, checks: r.checks.length, ...(r.uncheckedBecause ? { unchecked: r.uncheckedBecause } : {}) });
            },
            (err) => fail("image-doctor", err),
          );
    await Promise.all([text, image]);
    for (const n of [...textNodes, ...imageNodes]) graph.addNode(n);

    const searchChain = CallChain.join(ctx.meter, [textChain, imageChain]);
    if (record.search.enabled) {
      try {
        const out = await runWebSearch(deps.agents, { ...ctx, chain: searchChain }, c, graph, { maxPairs: opts.maxSearchPairs });
        record.search.pairsPlanned = out.pairsPlanned;
        record.search.pairsSearched = out.pairsSearched;
        for (const f of out.failures) failures.push({ branch: `web-search ${f.pair}`, code: f.code, message: f.message });
        for (const s of out.suspicious) record.untrusted.push({ source: s.url, note: s.note });
        emit("evidence", { agent: "web-search", pairs: out.pairsSearched, failed: out.failures.length });
      } catch (err) {
        fail("web-search", err);
      }
    }
    return {
      evidence: {
        ...record,
        graph: graph.export(),
        prompt: { text: renderEvidenceForPrompt(graph), activeNodeIds: graph.activeNodeIds() },
        depth: ctx.meter.snapshot(0).criticalPathCalls ?? 0,
        usage: ctx.meter.snapshot(Date.now() - started),
      },
    };
  };
}
