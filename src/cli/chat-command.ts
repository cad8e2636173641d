import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { assertLlmConfigured, loadConfig } from "../core/config.js";
import { isMedmmvError } from "../core/contracts/errors.js";
import { loadCaseFile } from "../core/intake/load-case.js";
import { intakeSettings } from "../core/intake/intake-settings.js";
import { Pipeline, pipelineOptions } from "../core/workflow/pipeline.js";
import { openSearchProvider } from "../core/search/create-search-provider.js";
import { CallChain, UsageMeter } from "../core/llm/usage.js";
import { loadPathway } from "../core/pathways/load-pathway.js";
import { casePathway } from "../core/pathways/path-conflict.js";
import { answerTurn, turnEvidence, type PriorTurn, type TurnRequest } from "../core/conversation/answer-turn.js";
import type { NewTurn } from "../server/store/case-store.js";
import { EXIT } from "./cli-args.js";
import { formatSummary } from "./format-summary.js";

export interface ChatOptions {
  pathway?: string;
  script?: string;
  k?: number;
  maxRepairs?: number;
  json?: boolean;
}

/** "[diagnosis] What is it?" names the step; anything else is a plain question. */
export function parseQuestionLine(line: string): TurnRequest | null {
  const text = line.trim();
  if (!text || text.startsWith("#")) return null;
  const m = /^\[([a-z0-9-]+)\]\s+(.+)$/.exec(text);
  return m ? { step: m[1]!, question: m[2]! } : { question: text };
}

function formatTurn(t: NewTurn): string {
  const label = t.step ? ` [${t.step}: ${t.category ?? "no-match"}]` : "";
  const conflict = t.contextConflict ? "  ⚠ context conflict: the conversation has left the pathway's valid paths" : "";
  return `(${t.turn})${label} ${t.answer}${conflict}`;
}

/**
 * `medmmv chat CASE.json [--pathway ID|FILE] [--script FILE]`: run the case, then answer
 * questions about it turn by turn (readline, or the lines of a script), each answer
 * labelled on the pathway and checked for context conflict, as POST /cases/{id}/turns does.
 */
export async function chatCommand(file: string, opts: ChatOptions, io: { input: Readable; output: Writable } = { input: process.stdin, output: process.stdout }): Promise<number> {
  let config;
  let c;
  let script: TurnRequest[] | null = null;
  try {
    config = loadConfig();
    assertLlmConfigured(config);
    c = await loadCaseFile(file, intakeSettings(config));
    // The operator's own file is read here, on the command line; the registry itself takes ids only.
    if (opts.pathway) c = { ...c, pathway: loadPathway(opts.pathway.endsWith(".json") ? JSON.parse(await readFile(opts.pathway, "utf8")) : opts.pathway) };
    if (opts.script) script = (await readFile(opts.script, "utf8")).split("\n").map(parseQuestionLine).filter((q): q is TurnRequest => q !== null);
  } catch (err) {
    process.stderr.write(`medmmv: ${isMedmmvError(err) ? err.message : String(err)}\n`);
    return EXIT.usage;
  }
  const write = (s: string) => io.output.write(`${s}\n`);
  try {
    // As diagnose and the server choose it: on Postgres the default looks for an indexed corpus.
    const pipeline = new Pipeline(config, { search: await openSearchProvider(config) });
    const { result, fullEvidenceGraph } = await pipeline.run(c, pipelineOptions(config, { k: opts.k, maxRepairs: opts.maxRepairs }));
    if (opts.json) write(JSON.stringify({ type: "result", result }));
    else write(formatSummary(result));
    if (result.status === "failed") return EXIT.failed;
    const pathway = casePathway(c.pathway);
    const evidence = turnEvidence(fullEvidenceGraph);
    const history: PriorTurn[] = [];
    const answer = async (request: TurnRequest) => {
      const meter = new UsageMeter(config.llm.prices);
      const turn = await answerTurn(pipeline, { caseKey: c.id, meter, chain: new CallChain(meter, 0) }, { case: c, ...(pathway ? { pathway } : {}), evidence, history, request });
      history.push(turn);
      write(opts.json ? JSON.stringify({ type: "turn", ...turn }) : formatTurn(turn));
    };
    if (script) {
      for (const q of script) await answer(q);
      return EXIT.ok;
    }
    if (!opts.json) write(`Ask about the case${pathway ? ` (pathway ${pathway.id}: steps ${pathway.steps.map((s) => s.id).join(", ")}; "[step] question" names one)` : ""}. Ctrl-D ends.`);
    const rl = createInterface({ input: io.input, output: io.output, terminal: false });
    for await (const line of rl) {
      const q = parseQuestionLine(line);
      if (!q) continue;
      try {
        await answer(q);
      } catch (err) {
        // A bad step or a failed call ends this turn, not the session.
        if (!isMedmmvError(err)) throw err;
        process.stderr.write(`medmmv: ${err.message}\n`);
      }
    }
    return EXIT.ok;
  } catch (err) {
    process.stderr.write(`medmmv: ${isMedmmvError(err) ? `[${err.code}] ${err.message}` : String(err)}\n`);
    return EXIT.failed;
  }
}
