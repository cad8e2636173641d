import type { DiagnosisResult } from "../core/contracts/diagnosis-result.js";

const pct = (x: number | null | undefined) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(0)}%`);
const num = (x: number | null | undefined, d = 2) => (x === null || x === undefined ? "—" : x.toFixed(d));

/** Failures whose message says what the provider or the model decided (a filter, a refusal, a limit). */
const EXPLAINED_FAILURES = new Set(["CONTENT_FILTERED", "MODEL_REFUSED", "MODEL_PARAMETER_UNSUPPORTED", "CONTEXT_TOO_LONG", "CONTEXT_TRUNCATED", "MODEL_NO_IMAGES", "QUOTA_EXCEEDED", "OUTPUT_TRUNCATED"]);

/**
 * The case's cost as known: "unpriced" where no call had a price, the priced part plus the
 * unpriced calls where some had none, "estimated" where replies stated no usage.
 */
export function costText(u: DiagnosisResult["usage"]): string {
  const unpriced = u.unpricedCalls ?? 0;
  const estimated = u.estimatedCalls ? ` (estimated: ${u.estimatedCalls} call(s) without usage, counted by a tokenizer)` : "";
  if (unpriced > 0 && unpriced >= u.llmCalls) return `unpriced (no price for the model: cost unknown)${estimated}`;
  const priced = `$${u.costUsd.toFixed(4)}`;
  return `${unpriced > 0 ? `${priced} + ${unpriced} unpriced call(s) of unknown cost` : priced}${estimated}`;
}

/** How the answers were grouped by meaning, when that differs from the letters or strings (stability.clusters). */
function clusterNote(r: DiagnosisResult): string {
  const clusters = r.stability.clusters;
  const lexical = r.stability.lexical;
  if (!clusters || !lexical || clusters.every((c) => c.rule === "option" || (c.wordings ?? []).length <= 1)) {
    const judge = r.provenance.answerClusters;
    return judge?.note ? `  (${judge.note})` : "";
  }
  const judge = r.provenance.answerClusters;
  return `  over ${clusters.length} answer clusters (${clusters.map((c) => `${c.rollouts.length}× ${c.canonical} [${c.rule}]`).join(", ")}; lexical entropy ${num(lexical.entropy)})${judge?.note ? `; ${judge.note}` : ""}`;
}

/** The human-readable summary printed by `medmmv diagnose` and `medmmv demo`. */
export function formatSummary(r: DiagnosisResult): string {
  const out: string[] = [];
  out.push(`Case ${r.caseId}: ${r.status.toUpperCase()}`);
  if (r.answer) out.push(`Answer: ${r.answer.option ? `(${r.answer.option}) ` : ""}${r.answer.text}   support ${pct(r.answerSupport)}`);
  if (r.abstentionReason) out.push(`Abstained: ${r.abstentionReason}`);
  if (r.error) out.push(`Error: [${r.error.code}] ${r.error.message}`);
  if (r.path) {
    out.push("", `Reasoning path ${r.path.id}: ${r.path.summary}`);
    r.path.steps.forEach((s, i) => {
      out.push(`  ${i + 1}. [${s.stage}] ${s.text}`);
      for (const c of s.claims) out.push(`       ${c.verdict === "supported" ? "✓" : c.verdict === "contradicted" ? "✗" : "?"} ${c.text}${c.evidence.length ? `  ← ${c.evidence.join(", ")}` : ""}`);
    });
  }
  const differential = r.differential ?? [];
  if (differential.length) {
    out.push("", "Differential (runs that named it; best path's CU):");
    for (const d of differential)
      out.push(
        `  ${d.rank}. ${d.answer.option ? `(${d.answer.option}) ` : ""}${d.answer.text}   ${d.rollouts} of ${d.of} runs   CU ${num(d.bestCu)}${d.candidateIndex !== null ? ` (${r.candidates[d.candidateIndex]?.pathId ?? "?"})` : ""}` +
          `${d.code ? `   ${d.code.code} ${d.code.display}` : ""}${d.wordings.length > 1 ? `\n       also worded: ${d.wordings.filter((w) => w !== d.answer.text).join("; ")}` : ""}`,
      );
  }
  out.push("", "Candidates (S_evidence + S_coherence − P_repair = CU):");
  for (const c of r.candidates) {
    const s = c.scores;
    out.push(
      `  ${c.selected ? "→" : " "} ${c.pathId.padEnd(8)} ${String(c.initialAnswer ?? "—").padEnd(3)}→ ${String(c.finalAnswer ?? "—").padEnd(3)} ×${c.multiplicity ?? 1}  repairs ${c.repairs}  ` +
        (s ? `${num(s.evidence)} + ${num(s.coherence)} − ${num(s.repairPenalty)} = ${num(s.cu)}` : `failed: ${c.error?.message ?? "?"}`),
    );
  }
  const flagged = r.hallucinations.length;
  const resolved = r.hallucinations.filter((h) => h.resolved).length;
  out.push("", `Hallucinations flagged: ${flagged} (${resolved} repaired)`);
  for (const h of r.hallucinations.slice(0, 8)) out.push(`  ${h.resolved ? "repaired" : "open    "} ${h.pathId} attempt ${h.attempt} [${h.stage}/${h.severity}] ${h.claim}`);
  const g = r.evidenceGraph as { nodes?: unknown[]; edges?: unknown[] } | null;
  out.push(
    `Evidence: ${g?.nodes?.length ?? 0} nodes, ${g?.edges?.length ?? 0} edges in the selected path's subgraph; web search ${r.provenance.search?.enabled ? (r.provenance.search.provider === "local" ? "on (local corpus, offline)" : "on") : `off (${r.provenance.search?.note ?? "disabled"})`}`,
  );
  out.push(`Stability: rollouts ${r.stability.rolloutAnswers.map((a) => a ?? "×").join(" ")}  RGM ${num(r.stability.rgm)}  entropy ${num(r.stability.entropy)}${clusterNote(r)}`);
  // A mixed panel: which model gave which rollout answer.
  const rolloutModels = r.provenance.rolloutModels ?? [];
  if (new Set(rolloutModels).size > 1) out.push(`Rollout models: ${rolloutModels.map((m, i) => `${r.stability.rolloutAnswers[i] ?? "×"} ${m}`).join("; ")}`);
  // Models that take no images: what stood in for the case's images (provenance.imageInput).
  const input = r.provenance.imageInput;
  if (input) out.push(`Images: ${input.models.filter((m) => m.saw !== "images").map((m) => `${m.role} ${m.model} saw ${m.saw === "description" ? `${input.describedBy}'s description, not the images` : "no image (it takes none)"}`).join("; ")}${input.describedBy === null ? "; no model of this deployment takes images: they were not examined" : ""}`);
  const u = r.usage;
  out.push(`Usage: ${u.llmCalls} model calls, ${u.searchCalls} searches, ${u.promptTokens}+${u.completionTokens} tokens (${u.cachedPromptTokens ?? 0} prompt tokens from the provider's cache), ${((u.imageBytes ?? 0) / 1024).toFixed(1)} KiB of images sent${u.imageTokens ? ` (${u.imageTokens} image tokens)` : ""}, ${costText(u)}, ${(u.wallMs / 1000).toFixed(1)} s (critical path ${u.criticalPathCalls ?? "?"} calls)`);
  const costly = Object.entries(u.byAgent).filter(([, a]) => (a.costUsd ?? 0) > 0);
  if (costly.length) out.push(`Cost by agent: ${costly.map(([agent, a]) => `${agent} $${(a.costUsd ?? 0).toFixed(4)}`).join(", ")}`);
  if (r.budgetExhausted) {
    const b = r.budgetExhausted;
    const limit = [b.maxTokens !== null ? `${b.maxTokens} tokens` : "", b.maxCostUsd !== null ? `$${b.maxCostUsd}` : ""].filter(Boolean).join(" / ");
    out.push(`Budget exhausted (${limit}): remaining repairs skipped on ${b.pathsWithRepairsSkipped.join(", ")}; selection ran on the paths as they were`);
  }
  if (r.provenance.failures?.length) out.push(`Branch failures: ${r.provenance.failures.map((f) => `${f.branch} [${f.code}]`).join("; ")}`);
  // What the provider or the model said stopped an agent: the reader must see which and why.
  for (const f of r.provenance.failures ?? []) if (EXPLAINED_FAILURES.has(f.code)) out.push(`  ${f.branch}: [${f.code}] ${f.message}`);
  out.push("", r.disclaimer);
  return out.join("\n");
}
