/**
 * Scripted model answers written for one known case: a "clinician" that reasons about the
 * real findings of that case instead of the generic filler of clinical-scenario.ts. A
 * CaseScript says what each agent would answer — the facts TextDoctor quotes, what
 * ImageDoctor sees (and gets wrong once), which fact pairs are searched and what the
 * literature says, the rollout paths, which claims the detector rejects and how each
 * flawed path is repaired. The answers are still computed from the prompts: evidence ids
 * are read from the evidence graph the pipeline rendered, so a claim cites only nodes that
 * really exist, and a fact that did not make it into the graph leaves its claims unsupported.
 */
import type { Scenario } from "../scripted-openai-server.js";
import type { TavilyRequest, TavilyResult } from "../scripted-tavily-server.js";
import { judgeEquivalence, optionLetters, optionText } from "../clinical-scenario.js";
// Labels are compared in the product's own normal form, so a script cannot drift from it.
import { normalizeLabel as norm } from "../../core/evidence/ids.js";

type Stage = "visual" | "knowledge" | "reasoning";
type Relation = "supports" | "contradicts" | "suggests" | "associated-with" | "explains";
type Category = "symptom" | "sign" | "history" | "lab" | "vital" | "medication" | "demographic" | "imaging" | "other";

/** A fact TextDoctor extracts; `quote` must be verbatim case text (the pipeline checks). */
export interface ScriptedFact {
  key: string;
  category: Category;
  label: string;
  detail?: string;
  quote: string;
}

export interface ScriptedImageFinding {
  /** Evidence key, for findings that claims cite. */
  key?: string;
  imageId: string;
  label: string;
  location: string;
  size?: string;
  characteristics: string;
  /** The image check rejects this finding (what a careful reader would not see in the image). */
  rejected?: { verdict: "contradicted" | "unsupported"; issue: string };
}

export interface ScriptedSearch {
  /** Fact keys of the pair. */
  a: string;
  b: string;
  query: string;
  /** Matches the query as it reaches the search server (after the product's scrubbing). */
  matches: RegExp;
  results: TavilyResult[];
  /**
   * Passages of the bundled example corpus (examples/corpus/, `corpus://NAME/ID`) that say
   * what `results` say: with the offline corpus (MEDMMV_SEARCH=local) the literature comes
   * from these instead, and a fact is reported when one of them is among the hits.
   */
  corpus?: string[];
  relation: Relation;
  /** What the results say; `resultIndex` (default 0) is the entry of `results` it was written from. */
  knowledge: Array<{ key: string; label: string; resultIndex?: number; relatesTo: "a" | "b" | "both"; relation: Relation }>;
}

export interface ScriptedClaim {
  text: string;
  /** Keys of the facts, image findings or knowledge the claim rests on. */
  evidence: string[];
  /** The detector rejects this claim (the claim is wrong, whatever the attempt). */
  flaw?: { verdict: "contradicted" | "unsupported"; issue: string; instruction: string; severity: "LOW" | "MEDIUM" | "HIGH" };
}

export interface ScriptedStep {
  text: string;
  stage: Stage;
  claims: ScriptedClaim[];
}

export interface ScriptedPath {
  answer: string;
  steps: ScriptedStep[];
  summary: string;
  coherence: number;
  rationale: string;
  /** What AutoRepair turns this path into when the detector flags it (a key of `paths`). */
  repairedTo?: string;
}

/** An answer to one conversation turn (POST /cases/{id}/turns) on this script's case. */
export interface ScriptedTurn {
  /** Matches the clinician's question. */
  asks: RegExp;
  /** The pathway step the answer is about. */
  step: string | null;
  answer: string;
  /** Checked by the hd-supervisor like a path's claims. */
  claims: ScriptedClaim[];
}

export interface CaseScript {
  name: string;
  /** True for the case block of this script's case. */
  matches: (caseText: string) => boolean;
  facts: ScriptedFact[];
  image?: { findings: ScriptedImageFinding[]; instructions: string[] };
  searches: ScriptedSearch[];
  paths: Record<string, ScriptedPath>;
  /** Path key of rollout i (cycled). */
  rollouts: string[];
  /** Answers to conversation turns, first match wins (a case without turns cannot be chatted with). */
  turns?: ScriptedTurn[];
}

/** Evidence ids by normalised label, read from the evidence graph rendered into the prompt. */
function evidenceIds(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^\[((?:f|k|h):[0-9a-f]{12})\] \([a-z]+\/[a-z-]+\) (.+?)(?: \| |$)/gm)) out.set(norm(m[2]!), m[1]!);
  return out;
}

/** The first model-output block of a prompt: the path under review or repair. */
function firstModelOutput(text: string): string {
  return /<<<MODEL_OUTPUT\n([\s\S]*?)\nMODEL_OUTPUT>>>/.exec(text.slice(text.indexOf("medmmv-agent:")))?.[1] ?? "";
}

function claimTexts(block: string): Array<{ id: string; text: string }> {
  return [...block.matchAll(/^ {2}- claimId (s\d+c\d+): (.*)$/gm)].map((m) => ({ id: m[1]!, text: m[2]! }));
}

function renderedFindings(f: ScriptedImageFinding): string {
  return `[${f.imageId}] ${f.label} | ${f.location}${f.size ? `, ${f.size}` : ""}; ${f.characteristics}`;
}

function findingOut(f: ScriptedImageFinding) {
  return { imageId: f.imageId, label: f.label, location: f.location, size: f.size ?? null, characteristics: f.characteristics };
}

/** Closes every text written for the demo's invented literature. */
export const DEMO_NOTE = "Text written for the medmmv demo; not a real publication.";

/** A literature result written for the demo: `text` with DEMO_NOTE appended, at https://literature.example/demo/<slug>. */
export function demoResult(slug: string, title: string, text: string, score: number): TavilyResult {
  return { title, url: `https://literature.example/demo/${slug}`, content: `${text} ${DEMO_NOTE}`, score };
}

/** The agents' answers for one case (routed to by demoScenario). */
export function caseAgents(s: CaseScript): Scenario["agents"] {
  const labels = new Map<string, string>();
  for (const f of s.facts) labels.set(f.key, f.label);
  for (const f of s.image?.findings ?? []) if (f.key) labels.set(f.key, f.label);
  for (const q of s.searches) for (const k of q.knowledge) labels.set(k.key, k.label);

  // Paths are recognised by their claims and claims by their text, so two paths with the same
  // claims, or two claims with one text but different evidence or flaw, would make the
  // verdict depend on the order of the script: refused here, at start-up.
  const pathBySignature = new Map<string, string>();
  const claimByText = new Map<string, ScriptedClaim>();
  const addClaim = (c: ScriptedClaim) => {
    const seen = claimByText.get(norm(c.text));
    if (seen && JSON.stringify([seen.evidence, seen.flaw]) !== JSON.stringify([c.evidence, c.flaw]))
      throw new Error(`the ${s.name} script has two claims "${c.text}" with different evidence or flaw: declare the claim once and reuse it`);
    claimByText.set(norm(c.text), c);
  };
  for (const [key, p] of Object.entries(s.paths)) {
    const signature = p.steps.flatMap((st) => st.claims.map((c) => norm(c.text))).join("|");
    const twin = pathBySignature.get(signature);
    if (twin !== undefined) throw new Error(`the ${s.name} script's paths ${twin} and ${key} make the same claims, so they cannot be told apart`);
    pathBySignature.set(signature, key);
    for (const st of p.steps) for (const c of st.claims) addClaim(c);
  }
  for (const t of s.turns ?? []) for (const c of t.claims) addClaim(c);
  const pathIn = (block: string): ScriptedPath | undefined => {
    const key = pathBySignature.get(claimTexts(block).map((c) => norm(c.text)).join("|"));
    return key ? s.paths[key] : undefined;
  };
  const pathOutput = (text: string, p: ScriptedPath) => ({
    steps: p.steps.map((st) => ({ text: st.text, stage: st.stage, claims: st.claims.map((c) => c.text) })),
    answer: optionLetters(text).length ? { option: p.answer, text: optionText(text, p.answer) } : { option: null, text: p.answer },
    summary: p.summary,
  });
  const resolve = (ids: Map<string, string>, keys: string[]) =>
    keys.map((k) => ids.get(norm(labels.get(k) ?? k))).filter((id): id is string => id !== undefined);
  const rejected = (s.image?.findings ?? []).filter((f) => f.rejected);
  const kept = (s.image?.findings ?? []).filter((f) => !f.rejected);
  const pairOf = (text: string) => {
    const a = /^A: (.*)$/m.exec(text)?.[1];
    const b = /^B: (.*)$/m.exec(text)?.[1];
    return s.searches.find((q) => norm(labels.get(q.a) ?? "") === norm(a ?? "") && norm(labels.get(q.b) ?? "") === norm(b ?? ""));
  };

  return {
    "text-doctor": () => ({ entities: s.facts.map((f) => ({ category: f.category, label: f.label, detail: f.detail ?? null, quote: f.quote })) }),
    "image-doctor": () => ({ findings: (s.image?.findings ?? []).map(findingOut) }),
    "image-hd": (req) => {
      // Judged against what is really in the image: the findings a careful reader would reject.
      const lines = [...req.text.matchAll(/^index (\d+): (.*)$/gm)].map((m) => ({ index: Number(m[1]), line: m[2]! }));
      const verdicts = lines.map(({ index, line }) => {
        const bad = rejected.find((f) => renderedFindings(f) === line);
        return { index, verdict: bad ? bad.rejected!.verdict : "supported", issue: bad ? bad.rejected!.issue : null };
      });
      const flagged = verdicts.some((v) => v.verdict !== "supported");
      return { hallucinationDetected: flagged, findings: verdicts, improvementInstructions: flagged ? (s.image?.instructions ?? []) : [] };
    },
    "image-revise": () => ({ findings: kept.map(findingOut) }),
    "web-search-query": (req) => {
      const ids = evidenceIds(req.text);
      const pairs = s.searches
        .map((q) => ({ a: ids.get(norm(labels.get(q.a) ?? "")), b: ids.get(norm(labels.get(q.b) ?? "")), query: q.query }))
        .filter((p): p is { a: string; b: string; query: string } => p.a !== undefined && p.b !== undefined);
      return { pairs };
    },
    "web-search-analysis": (req) => {
      // Only what the results in front of it say: a scripted fact is reported when the result
      // it was written from is among them (whichever provider returned it, at whatever index).
      const shown = new Map([...req.text.matchAll(/^\[result (\d+)\] .* \((\S+)\)$/gm)].map((m) => [m[2]!, Number(m[1])]));
      const q = pairOf(req.text);
      const corpusHit = (q?.corpus ?? []).map((url) => shown.get(url)).find((at) => at !== undefined);
      const knowledge = (q?.knowledge ?? []).flatMap((k) => {
        const at = shown.get(q!.results[k.resultIndex ?? 0]?.url ?? "") ?? corpusHit;
        return at === undefined ? [] : [{ label: k.label, resultIndex: at, relatesTo: k.relatesTo, relation: k.relation }];
      });
      if (!q || knowledge.length === 0) return { relation: null, relationResultIndex: null, knowledge: [], suspiciousContent: false };
      return { relation: q.relation, relationResultIndex: knowledge[0]!.resultIndex, knowledge, suspiciousContent: false };
    },
    rollout: (req) => {
      const i = Number(/rollout (\d+) of/.exec(req.text)?.[1] ?? 1) - 1;
      return pathOutput(req.text, s.paths[s.rollouts[i % s.rollouts.length]!]!);
    },
    "turn-answer": (req) => {
      const question = /<<<QUESTION\n([\s\S]*?)\nQUESTION>>>/.exec(req.text)?.[1] ?? "";
      const t = s.turns?.find((x) => x.asks.test(question));
      return t ? { step: t.step, answer: t.answer, claims: t.claims.map((c) => c.text) } : unscriptedTurn();
    },
    cot: (req) => {
      const p = s.paths[s.rollouts[0]!]!;
      return { reasoning: p.steps.map((st) => st.text).join(" "), answer: pathOutput(req.text, p).answer };
    },
    "hd-supervisor": (req) => {
      const ids = evidenceIds(req.text);
      const block = firstModelOutput(req.text);
      const claims = claimTexts(block).map(({ id, text }) => {
        const scripted = claimByText.get(norm(text));
        const evidence = resolve(ids, scripted?.evidence ?? []);
        // A claim's stage is its step's (s2c1 → "Step 2 [knowledge]").
        const stage = (new RegExp(`^Step ${id.slice(1, id.indexOf("c"))} \\[([a-z]+)\\]`, "m").exec(block)?.[1] ?? "reasoning") as Stage;
        const verdict = scripted?.flaw ? scripted.flaw.verdict : evidence.length ? "supported" : "unsupported";
        return { claimId: id, verdict, evidence, stage, flaw: scripted?.flaw };
      });
      const flaws = claims.flatMap((c) => (c.flaw ? [c.flaw] : []));
      const rank = { LOW: 0, MEDIUM: 1, HIGH: 2 } as const;
      const severity = flaws.reduce<"LOW" | "MEDIUM" | "HIGH">((m, f) => (rank[f.severity] > rank[m] ? f.severity : m), "LOW");
      return {
        hallucinationDetected: flaws.length > 0,
        recommendation: flaws.length ? `revise: ${flaws[0]!.issue}` : "accept: every claim rests on the case text or the cited literature",
        severity,
        issues: flaws.map((f) => f.issue),
        improvementInstructions: flaws.map((f) => f.instruction),
        claims: claims.map(({ flaw: _flaw, ...c }) => c),
      };
    },
    "auto-repair": (req) => {
      const p = pathIn(firstModelOutput(req.text));
      const to = p?.repairedTo ? s.paths[p.repairedTo] : p;
      if (!to) throw new Error(`the ${s.name} script has no path matching the one to repair`);
      return pathOutput(req.text, to);
    },
    "equivalence-judge": (req) => judgeEquivalence(req.text),
    "coherence-judge": (req) => {
      const p = pathIn(firstModelOutput(req.text));
      return p ? { coherence: p.coherence, rationale: p.rationale } : { coherence: 0.5, rationale: "The path is not one this script knows." };
    },
  };
}

/**
 * The answer to a conversation question no script has an answer for: it says so, instead of
 * failing the turn with a model error a demo user could do nothing about.
 */
export function unscriptedTurn(): { step: null; answer: string; claims: string[] } {
  return {
    step: null,
    answer: "The demo's scripted model has no answer written for this question; with a live model configured, medmmv answers any question about the case.",
    claims: ["No answer was scripted for this question"],
  };
}

/** Literature results for a query of this script, or undefined when it is not one of them. */
export function caseSearchResults(s: CaseScript, req: TavilyRequest): TavilyResult[] | undefined {
  return s.searches.find((q) => q.matches.test(req.query))?.results;
}
