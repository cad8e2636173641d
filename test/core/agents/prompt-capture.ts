/**
 * Every agent's prompt for one fixed, synthetic case, captured without a model: a recording
 * LLM client keeps the messages of each call and answers with a canned object, so each agent
 * runs its real code (its slots, its evidence, its fences) up to and after the call.
 * The prompt-layout test compares these captures with the ones recorded before the prompts
 * were re-laid out for prefix caching (fixtures/prompts-before-relayout.json).
 */
import type { PreparedCase } from "../../../src/core/contracts/clinical-case.js";
import type { HdReport } from "../../../src/core/contracts/diagnosis-result.js";
import type { PathOutput } from "../../../src/core/contracts/reasoning-path.js";
import type { AgentDeps } from "../../../src/core/agents/agent-context.js";
import type { CallContext, LlmClient, StructuredCall } from "../../../src/core/llm/model-client.js";
import type { ChatMessage } from "../../../src/core/llm/messages.js";
import type { SearchProvider } from "../../../src/core/search/search-provider.js";
import { PromptLibrary } from "../../../src/core/llm/prompt-template.js";
import { CallChain, UsageMeter } from "../../../src/core/llm/usage.js";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";
import { renderEvidenceForPrompt } from "../../../src/core/evidence/render-for-prompt.js";
import { runRollout } from "../../../src/core/agents/rollout.js";
import { runTextDoctor } from "../../../src/core/agents/text-doctor.js";
import { runImageDoctor } from "../../../src/core/agents/image-doctor.js";
import { runWebSearch } from "../../../src/core/agents/web-search.js";
import { runHdSupervisor } from "../../../src/core/agents/hd-supervisor.js";
import { runAutoRepair } from "../../../src/core/agents/auto-repair.js";
import { runCoherenceJudge } from "../../../src/core/agents/coherence-judge.js";
import { runTurnAnswer } from "../../../src/core/agents/turn-answer.js";
import { runPathwayJudge } from "../../../src/core/agents/pathway-judge.js";
import { runCot } from "../../../src/eval/agents/cot.js";
import { runStagedCot } from "../../../src/eval/agents/cot-staged.js";
import { runRater } from "../../../src/eval/agents/rater.js";
import { runAnswerJudge } from "../../../src/eval/agents/answer-judge.js";
import { runStageJudge } from "../../../src/eval/agents/stage-judge.js";
import { runStagewiseContinuation, runStagewiseTrace } from "../../../src/eval/agents/stagewise-trace.js";

export interface CapturedCall {
  /** agent, and which of its calls (`hd-supervisor#2`). */
  label: string;
  messages: ChatMessage[];
}

/** A 1×1 PNG (synthetic). */
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

export function captureCase(): PreparedCase {
  return {
    id: "prompt-layout-case",
    question: "What is the most likely diagnosis?",
    notes: "Synthetic case. A 58-year-old man has crushing chest pain for 40 minutes. He smokes. ECG shows ST elevation in II, III and aVF. Troponin I is 2.4 ng/mL.",
    options: { A: "Acute pericarditis", B: "Inferior myocardial infarction", C: "Aortic dissection" },
    patient: { age: 58, sex: "male" },
    images: [{ id: "ecg-1", mimeType: "image/png", data: PIXEL, caption: "12-lead ECG", sha256: "0".repeat(64) }],
  };
}

const PATH: PathOutput = {
  steps: [
    { text: "ST elevation in the inferior leads.", stage: "visual", claims: ["ST elevation in II, III, aVF"] },
    { text: "Raised troponin means myocardial injury.", stage: "reasoning", claims: ["troponin is raised", "the pattern is an inferior infarction"] },
  ],
  answer: { option: "B", text: "Inferior myocardial infarction" },
  summary: "Inferior STEMI from ECG and troponin.",
} as PathOutput;

const FINDINGS = { findings: [{ imageId: "ecg-1", label: "ST elevation", location: "leads II, III, aVF", size: null, characteristics: "convex" }] };

/** What the recording client answers each agent (valid for its schema). */
function cannedReply(agent: string, call: StructuredCall<never>): unknown {
  switch (agent) {
    case "rollout":
    case "auto-repair":
      return PATH;
    case "text-doctor":
      return { entities: [{ category: "symptom", label: "chest pain", detail: null, quote: "crushing chest pain" }, { category: "lab", label: "troponin I 2.4 ng/mL", detail: null, quote: "Troponin I is 2.4 ng/mL" }] };
    case "image-doctor":
    case "image-revise":
      return FINDINGS;
    case "image-hd":
      return { hallucinationDetected: call.messages.length > 0, findings: [{ index: 0, verdict: "unsupported", issue: "not visible" }], improvementInstructions: ["check the leads"] };
    default:
      return {};
  }
}

function graphOf(): EvidenceGraph {
  const g = new EvidenceGraph();
  const a = g.addNode({ kind: "finding", category: "symptom", label: "chest pain", source: { agent: "text-doctor", quote: "crushing chest pain", span: [40, 59] } });
  const b = g.addNode({ kind: "finding", category: "lab", label: "troponin I 2.4 ng/mL", source: { agent: "text-doctor", quote: "Troponin I is 2.4 ng/mL", span: [110, 133] } });
  g.addNode({ kind: "finding", category: "imaging", label: "ST elevation", detail: "leads II, III, aVF", source: { agent: "image-doctor", imageId: "ecg-1", region: "leads II, III, aVF" } });
  const k = g.addNode({ kind: "knowledge", category: "literature", label: "troponin rises in myocardial infarction", source: { agent: "web-search", url: "https://example.org/mi", title: "MI review", retrievedAt: "2026-01-01T00:00:00.000Z" } });
  g.addEdge(k, b, "explains", { agent: "web-search", url: "https://example.org/mi", retrievedAt: "2026-01-01T00:00:00.000Z" });
  g.addEdge(a, b, "associated-with", { agent: "web-search", url: "https://example.org/mi", retrievedAt: "2026-01-01T00:00:00.000Z" });
  return g;
}

/** Runs every agent once (the image loop and web search to their second call) and returns what each call sent. */
export async function capturePrompts(): Promise<CapturedCall[]> {
  const calls: CapturedCall[] = [];
  const seen = new Map<string, number>();
  let plannedPairs: { a: string; b: string }[] = [];
  const llm = {
    // No profile: every model takes images (image-description.ts), so every image call carries them.
    imagesPerRequest: () => null,
    async structured(call: StructuredCall<never>) {
      const n = (seen.get(call.agent) ?? 0) + 1;
      seen.set(call.agent, n);
      calls.push({ label: `${call.agent}#${n}`, messages: structuredClone(call.messages) });
      if (call.agent === "web-search-query") return { pairs: plannedPairs.map((p) => ({ ...p, query: "chest pain troponin" })) };
      if (call.agent === "web-search-analysis") return { relation: null, relationResultIndex: null, knowledge: [], suspiciousContent: false };
      if (call.agent === "hd-supervisor") return { hallucinationDetected: false, recommendation: "accept", severity: "LOW", issues: [], improvementInstructions: [], claims: [] };
      if (call.agent === "coherence-judge") return { coherence: 1, rationale: "ok" };
      if (call.agent === "pathway-judge") return { category: "no-match", reason: "none" };
      return cannedReply(call.agent, call);
    },
  } as unknown as LlmClient;
  const search: SearchProvider = {
    name: "local",
    enabled: true,
    async search(query) {
      return { query, retrievedAt: "2026-01-01T00:00:00.000Z", results: [{ title: "MI review", url: "https://example.org/mi", content: "Troponin rises within hours of a myocardial infarction." }] };
    },
  };
  const deps: AgentDeps = { llm, prompts: new PromptLibrary(), search };
  const meter = new UsageMeter();
  const ctx: CallContext = { caseKey: "prompt-layout", meter, chain: new CallChain(meter) };
  const c = captureCase();

  for (let index = 0; index < 2; index++) await runRollout(deps, ctx, { case: c, index, k: 3, temperature: 0.7 });
  await runTextDoctor(deps, ctx, c);
  await runImageDoctor(deps, ctx, c, { checkFindings: true });
  const searchGraph = new EvidenceGraph();
  const a = searchGraph.addNode({ kind: "finding", category: "symptom", label: "chest pain", source: { agent: "text-doctor", quote: "crushing chest pain", span: [40, 59] } });
  const b = searchGraph.addNode({ kind: "finding", category: "lab", label: "troponin I 2.4 ng/mL", source: { agent: "text-doctor", quote: "Troponin I is 2.4 ng/mL", span: [110, 133] } });
  plannedPairs = [{ a, b }];
  await runWebSearch(deps, ctx, c, searchGraph, { maxPairs: 4 });
  const graph = graphOf();
  const evidenceText = renderEvidenceForPrompt(graph);
  const known = (id: string) => graph.hasNode(id);
  await runHdSupervisor(deps, ctx, c, { path: PATH, evidenceText, knownNodeIds: known, attempt: 1 });
  const report: HdReport = {
    attempt: 1, hallucinationDetected: true, recommendation: "revise", severity: "MEDIUM", issues: ["claim s2c2 lacks support"], improvementInstructions: ["cite the ECG"],
    claims: [{ claim: "the pattern is an inferior infarction", verdict: "unsupported", evidence: [], stage: "reasoning" }], path: undefined,
  };
  await runAutoRepair(deps, ctx, c, { path: PATH, report, evidenceText });
  await runHdSupervisor(deps, ctx, c, { path: PATH, evidenceText, knownNodeIds: known, attempt: 2 });
  await runCoherenceJudge(deps, ctx, c, PATH);
  await runTurnAnswer(deps, ctx, c, { question: "Which leads show it?", history: [{ turn: 1, question: "What does the ECG show?", answer: "Inferior ST elevation." }], evidenceText });
  await runPathwayJudge(deps, ctx, c, { step: { id: "dx", question: "Which diagnosis?", categories: [{ id: "mi", label: "Myocardial infarction", keywords: ["infarction"] }] }, answer: "a heart attack" });
  await runCot(deps, ctx, c, { temperature: 0 });
  await runStagedCot(deps, ctx, c, { temperature: 0 });
  await runRater(deps, ctx, c, { output: "B: inferior MI, from the ECG.", gold: "B" });
  await runAnswerJudge(deps, ctx, c, { prediction: "inferior MI", groundTruth: "Inferior myocardial infarction" });
  for (const stage of ["visual", "knowledge", "reasoning"] as const)
    await runStageJudge(deps, ctx, c, { stage, candidate: "ST elevation inferior", reference: "Inferior ST elevation", support: "ECG: ST elevation II, III, aVF", groundTruth: "B" });
  await runStagewiseTrace(deps, ctx, c, { format: "structured", temperature: 0 });
  await runStagewiseTrace(deps, ctx, c, { format: "text", temperature: 0 });
  await runStagewiseContinuation(deps, ctx, c, { given: "[Visual Recognition] ST elevation inferior", writeKnowledge: true, format: "structured", temperature: 0 });
  await runStagewiseContinuation(deps, ctx, c, { given: "[Visual Recognition] ST elevation inferior", writeKnowledge: false, format: "text", temperature: 0 });
  return calls;
}
