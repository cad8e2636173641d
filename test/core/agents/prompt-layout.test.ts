import { readFileSync } from "node:fs";
import { commonPrefix } from "../../../src/scripted/prompt-cache.js";
import { describe, expect, it } from "vitest";
import type { ChatMessage, ContentPart } from "../../../src/core/llm/messages.js";
import { capturePrompts, type CapturedCall } from "./prompt-capture.js";

/**
 * The prompts were re-laid out for providers' prefix caches (system · case · evidence · task ·
 * schema · images · variable part, docs/architecture.md). That changed their order and so
 * their hashes in provenance, never what an agent is told: every agent receives, section by
 * section, what it received before. "Before" is the capture of the code before the change
 * (fixtures/prompts-before-relayout.json, recorded once from commit ca10dbd).
 */
const before: CapturedCall[] = JSON.parse(readFileSync(new URL("./fixtures/prompts-before-relayout.json", import.meta.url), "utf8")).calls;

/**
 * The only wording that changed, and why: the search planner's evidence graph moved from the
 * end of its prompt to the shared place after the case block (with the same fence heading the
 * fact-checkers' graph has), so "below" became "above". The stage-wise continuation's closing
 * sentence had lost its full stop to a path rewrite when the sources moved into wings ("." read
 * as a module path): it ends in a full stop again.
 */
const REWORDED: Record<string, Record<string, string>> = {
  "web-search-query": {
    "Task: choose up to 4 pairs of facts from the evidence below whose medical relationship would help answer the case's question, and write one concise literature search query for each pair.":
      "Task: choose up to 4 pairs of facts from the evidence graph above whose medical relationship would help answer the case's question, and write one concise literature search query for each pair.",
    "- Refer to facts ONLY by their ids in brackets (e.g. f:1a2b3c4d5e6f). Use only ids listed below.": "- Refer to facts ONLY by their ids in brackets (e.g. f:1a2b3c4d5e6f). Use only ids listed in the evidence graph above.",
    "Evidence:": "Evidence graph (ids in brackets):",
  },
  "stagewise-continue": {
    "Write only the remaining stage(s): [Knowledge Recall] and [Reasoning]. Each stage needs at least three words; the reasoning integrates the stages before it into a justified conclusion. Put them in `knowledgeRecall`, `reasoning` and `answer`../../core/agents":
      "Write only the remaining stage(s): [Knowledge Recall] and [Reasoning]. Each stage needs at least three words; the reasoning integrates the stages before it into a justified conclusion. Put them in `knowledgeRecall`, `reasoning` and `answer`.",
  },
};

/**
 * Our own prompt text became Latin-1 since that capture, so that a request whose case is
 * Latin-1 serialises as a one-byte string (a two-byte body costs the client about ten times
 * the CPU to encode): the fence names' ellipsis, the evidence graph's field separator and the
 * image findings' separator. Applied to the capture from before; nothing else changed.
 */
function latin1Typography(fence: string, body: string): string {
  if (fence === "EVIDENCE") return body.replaceAll(" \u2014 ", " | ").replace(/\u2026(?=[ "|]|$)/gm, "...");
  if (fence === "MODEL_OUTPUT") return body.replace(/^(index \d+: \[[^\]\n]*\] [^\n]*?) \u2014 /gm, "$1 | ");
  return body;
}

const FENCE = /^<<<([A-Z_]+)\n([\s\S]*?)\n\1>>>$/gm;

interface Sections {
  system: string;
  /** Each fenced block (case, evidence, model output, question, search content) by name. */
  fenced: string[];
  /** Every other non-empty line: the instructions, the schema, the labels of the blocks. */
  lines: string[];
  images: string[];
}

function texts(m: ChatMessage): string[] {
  return typeof m.content === "string" ? [m.content] : m.content.filter((p): p is Extract<ContentPart, { type: "text" }> => p.type === "text").map((p) => p.text);
}

function sections(call: CapturedCall, reworded: Record<string, string> = {}, typography = false): Sections {
  const [system, ...rest] = call.messages;
  const fenced: string[] = [];
  const lines: string[] = [];
  const images: string[] = [];
  for (const m of rest) {
    if (typeof m.content !== "string") for (const p of m.content) if (p.type === "image_url") images.push(p.image_url.url);
    for (const t of texts(m)) {
      // Blocks nest (search content inside the evidence graph): take the outermost ones.
      const outside = t.replace(FENCE, (_block, name: string, raw: string) => {
        const body = typography ? latin1Typography(name, raw) : raw;
        // The evidence graph's lines keep their order, except its count line, which moved
        // from its head to its end (it changes as the search adds nodes, and would end the
        // shared prefix early).
        fenced.push(name === "EVIDENCE" ? `${name}:${[...body.split("\n")].sort().join("\n")}` : `${name}:${body}`);
        return "";
      });
      for (const line of outside.split("\n")) if (line.trim()) lines.push(reworded[line] ?? line);
    }
  }
  const systemText = texts(system!).join("\n");
  return { system: typography ? systemText.replaceAll(" \u2026 ", " ... ") : systemText, fenced: fenced.sort(), lines: lines.sort(), images };
}

describe("prompt layout for prefix caching", async () => {
  const after = await capturePrompts();

  it("captures the same calls as before", () => {
    expect(after.map((c) => c.label)).toEqual(before.map((c) => c.label));
  });

  it.each(before.map((c) => [c.label, c] as const))("%s receives the same information, section by section", (label, was) => {
    const now = after.find((c) => c.label === label)!;
    const agent = label.split("#")[0]!;
    const a = sections(was, REWORDED[agent], true);
    const b = sections(now);
    expect(b.system).toBe(a.system);
    expect(b.fenced).toEqual(a.fenced);
    expect(b.lines).toEqual(a.lines);
    expect(b.images).toEqual(a.images);
  });

  const userText = (c: CapturedCall) => texts(c.messages[1]!).join("\u0000");

  // stagewise-continue's task sentence introduces the given stages, so its fence belongs to the
  // task (it runs once per eval item: nothing of it repeats across calls after the case).
  it.each(after.filter((c) => !c.label.startsWith("stagewise-continue")).map((c) => [c.label, c] as const))("%s opens with the case block and keeps its variable part after the schema", (_label, call) => {
    const text = userText(call);
    expect(text.startsWith("<<<CASE\n")).toBe(true);
    const schemaAt = text.indexOf("Reply with a JSON object that matches this JSON Schema:");
    expect(schemaAt).toBeGreaterThan(0);
    // What varies between an agent's calls (a path, findings, results, a turn) is fenced and comes after the schema.
    for (const fence of ["<<<MODEL_OUTPUT", "<<<QUESTION", "<<<UNTRUSTED_SEARCH_CONTENT\n[result"]) {
      const at = text.indexOf(fence);
      if (at >= 0) expect(at).toBeGreaterThan(schemaAt);
    }
    // The evidence graph, where a call has one, comes before the agent's own task.
    const evidence = text.indexOf("<<<EVIDENCE\n[");
    if (evidence >= 0) expect(evidence).toBeLessThan(text.indexOf("medmmv-agent:"));
    // Images follow the shared text and precede the variable part.
    const content = call.messages[1]!.content;
    if (typeof content !== "string") expect(content[0]!.type).toBe("text");
  });

  it("an agent's calls of one case share everything up to their variable part", () => {
    const byAgent = new Map<string, CapturedCall[]>();
    for (const c of after) byAgent.set(c.label.split("#")[0]!, [...(byAgent.get(c.label.split("#")[0]!) ?? []), c]);
    for (const agent of ["rollout", "hd-supervisor"]) {
      const [first, second] = byAgent.get(agent)!;
      const x = userText(first!);
      const n = commonPrefix(x, userText(second!));
      // Past the schema: the two calls differ only in the rollout's index / the attempt and path.
      expect(n).toBeGreaterThan(x.indexOf("Reply with a JSON object"));
    }
    // The fact-check and the repair of a path share the case and the evidence graph.
    const hd = userText(byAgent.get("hd-supervisor")![0]!);
    const repair = userText(byAgent.get("auto-repair")![0]!);
    expect(commonPrefix(hd, repair)).toBeGreaterThan(hd.indexOf("EVIDENCE>>>"));
  });
});
