import { DISCLAIMER, type DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";
import type { EvidenceAgent, NodeKind } from "../../../src/core/contracts/evidence.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import type { CaseViewCaseInput } from "../../../src/server/view/render-view.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { encodePng } from "../../../src/scripted/image-bytes.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { startScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { startScriptedTavily } from "../../../src/scripted/scripted-tavily-server.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";

/** A real RGB PNG (a grey square with a bright blob), small enough to inline anywhere. */
export function makePng(width = 48, height = 48): Buffer {
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) {
      const d = Math.hypot(x - width / 2, y - height / 2);
      const v = d < width / 5 ? 230 : 40 + ((x + y) % 16);
      row[1 + x * 3] = v;
      row[2 + x * 3] = v;
      row[3 + x * 3] = v;
    }
    rows.push(row);
  }
  return encodePng(width, height, 2, Buffer.concat(rows));
}

export interface ScriptedCaseRun {
  result: DiagnosisResult;
  fullEvidenceGraph: Record<string, unknown> | null;
  caseInput: CaseViewCaseInput;
}

/**
 * A real result: the pipeline over HTTP against the scripted model and search servers, with an
 * image, disagreeing rollouts (several candidates) and paths that need repairs.
 */
export async function runScriptedCase(o: { imageReplyFiltered?: boolean } = {}): Promise<ScriptedCaseRun> {
  const openai = await startScriptedOpenAI({
    scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A", "B", "C"], repairsNeeded: { A: 2, B: 1 } }),
  });
  // Azure's content filter stopping ImageDoctor's reply (200, finish_reason content_filter, no content): the image goes unread.
  if (o.imageReplyFiltered) openai.setProvider("azure", { completionFilter: /"imageId"/ });
  const azure: Record<string, string> = o.imageReplyFiltered ? { AZURE_OPENAI_API_KEY: "az-key", AZURE_OPENAI_ENDPOINT: openai.baseUrl.replace(/\/v1$/, ""), MEDMMV_MODEL: "gpt-4o", MEDMMV_JUDGE_MODEL: "gpt-4o" } : {};
  const tavily = await startScriptedTavily();
  try {
    const config = scriptedConfig(openai.baseUrl, { TAVILY_API_KEY: "test-tavily-key", TAVILY_BASE_URL: tavily.baseUrl, ...azure });
    const base = chestPainCase("case-view-1");
    const png = makePng().toString("base64");
    const prepared = await prepareCase(
      {
        id: base.id,
        question: base.question,
        notes: base.notes,
        options: base.options,
        patient: base.patient,
        images: [{ id: "ecg1", mimeType: "image/png", data: png, caption: "12-lead ECG strip" }],
      },
      { maxBytes: 5_000_000, maxPixels: 10_000_000, allowPath: false },
    );
    const run = await new Pipeline(config).run(prepared, pipelineOptions(config));
    return {
      result: run.result,
      fullEvidenceGraph: run.fullEvidenceGraph,
      caseInput: {
        question: prepared.question,
        notes: prepared.notes,
        options: prepared.options,
        images: prepared.images.map((i) => ({ id: i.id, mimeType: i.mimeType, data: i.data, caption: i.caption })),
      },
    };
  } finally {
    await openai.close();
    await tavily.close();
  }
}

const AGENTS: EvidenceAgent[] = ["text-doctor", "image-doctor", "web-search"];
const KINDS: NodeKind[] = ["finding", "finding", "knowledge", "hypothesis"];
const RELATIONS = ["supports", "contradicts", "suggests", "associated-with", "explains", "located-in"] as const;

/** A deterministic synthetic case with `n` evidence nodes (some retracted) and about 2n edges. */
export function syntheticCase(n: number): ScriptedCaseRun {
  const g = new EvidenceGraph();
  const ids: string[] = [];
  const notes = Array.from({ length: n }, (_, i) => `Observation number ${i} was recorded.`).join(" ");
  for (let i = 0; i < n; i++) {
    const agent = AGENTS[i % AGENTS.length]!;
    const quote = `Observation number ${i} was recorded`;
    const start = notes.indexOf(quote);
    ids.push(
      g.addNode({
        kind: KINDS[i % KINDS.length]!,
        category: agent === "web-search" ? "literature" : agent === "image-doctor" ? "imaging" : "sign",
        label: `synthetic evidence ${i}`,
        source:
          agent === "text-doctor"
            ? { agent, quote, span: [start, start + quote.length] }
            : agent === "image-doctor"
              ? { agent, imageId: "img1", region: "upper left" }
              : { agent, url: `https://literature.example/item/${i}`, title: `Article ${i}`, retrievedAt: "2026-01-01T00:00:00.000Z" },
      }),
    );
  }
  for (let i = 0; i < n; i++) {
    g.addEdge(ids[i]!, ids[(i * 7 + 3) % n]!, RELATIONS[i % RELATIONS.length]!, { agent: "web-search" });
    g.addEdge(ids[i]!, ids[(i * 13 + 11) % n]!, RELATIONS[(i + 2) % RELATIONS.length]!, { agent: "text-doctor" });
  }
  for (let i = 5; i < n; i += 37) g.retract(ids[i]!, "quote not found on re-check");
  const cited = [ids[0]!, ids[3]!, ids[10]!];
  const sub = g.supportingSubgraph(cited);
  const path = {
    id: "path-1",
    summary: "Synthetic path",
    steps: [
      { text: "First step", stage: "visual" as const, claims: [{ text: "claim one", verdict: "supported" as const, evidence: [ids[0]!, ids[3]!] }] },
      { text: "Second step", stage: "reasoning" as const, claims: [{ text: "claim two", verdict: "unsupported" as const, evidence: [ids[10]!] }] },
    ],
  };
  const result: DiagnosisResult = {
    caseId: "synthetic-300",
    status: "completed",
    answer: { option: "A", text: "Synthetic answer" },
    answerSupport: 1,
    abstentionReason: null,
    path,
    evidenceGraph: sub.export(),
    candidates: [
      {
        pathId: "path-1",
        initialAnswer: "A",
        finalAnswer: "A",
        repairs: 0,
        scores: { evidence: 0.5, coherence: 0.9, repairPenalty: 0, cu: 1.4 },
        selected: true,
        hdReports: [],
      },
    ],
    stability: { rolloutAnswers: ["A"], distribution: { A: 1 }, rgm: 0, entropy: 0 },
    hallucinations: [],
    usage: { llmCalls: 0, searchCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, wallMs: 0, byAgent: {} },
    provenance: { models: {}, prompts: {}, config: {}, startedAt: "2026-01-01T00:00:00.000Z", finishedAt: "2026-01-01T00:00:01.000Z", version: "test" },
    disclaimer: DISCLAIMER,
  };
  return {
    result,
    fullEvidenceGraph: g.export() as unknown as Record<string, unknown>,
    caseInput: { question: "Synthetic question?", notes, images: [{ id: "img1", mimeType: "image/png", data: makePng(16, 16).toString("base64") }] },
  };
}
