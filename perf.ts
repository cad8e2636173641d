import { computeMetrics } from "./src/eval/metrics.js";
const n = Number(process.argv[2]);
const recs = Array.from({ length: n }, (_, i) => ({ id: `q${i % (n / 2)}`, run: i < n / 2 ? 0 : 1, method: "medmmv", status: "completed", answer: null, gold: { kind: "open", text: "" }, correct: Math.random() < 0.6, strata: { s: `v${i % 7}` }, usage: { llmCalls: 1, searchCalls: 0, promptTokens: 1, completionTokens: 1, costUsd: 0.001, wallMs: 1, byAgent: {} }, cu: null, answerSupport: Math.random(), stability: null, hallucinations: { visual: 0, knowledge: 1, reasoning: 0, total: 1, resolved: 0 }, errors: [], attempts: 1, finishedAt: "" }));
const t = Date.now(); computeMetrics(recs as never); console.log(n, Date.now() - t, "ms");
