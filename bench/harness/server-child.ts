/**
 * Child process hosting the scripted model and search servers, so that their CPU time is
 * not counted against the pipeline in the overhead benchmark, and the two processes use
 * both cores the way a real client and a real provider would. Driven over IPC.
 */
import { startScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { startScriptedTavily } from "../../src/scripted/scripted-tavily-server.js";
import { commonPrefix } from "../../src/scripted/prompt-cache.js";
import { benchScenario, type BenchScenarioOptions } from "./bench-scenario.js";
import type { Scenario, ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";
import type { ChildReply, ChildRequest } from "./servers.js";

/**
 * Prompt size per agent as the server received it: text characters, image data-URL
 * characters, and how many of the text characters continue a prefix that an earlier call
 * (since the last reset: one case) already sent — what a provider's prompt cache can serve.
 */
let promptByAgent: Record<string, { calls: number; textChars: number; imageChars: number; reusedPrefixChars: number; newLineChars: number }> = {};
/** The text of every call since the last reset, messages joined by a separator. */
let sentTexts: string[] = [];
/**
 * Every line of text an earlier call (since the last reset) carried. A prefix already sent
 * holds only such lines (but for the start of a new line that happens to begin like an old
 * one), so the characters of lines no earlier call carried are what no layout of the same
 * text can serve from a prompt cache: about the floor under any reordering.
 */
let sentLines = new Set<string>();

/** The bench scenario, with each agent's script wrapped to count what its prompts carried. */
function counted(o: BenchScenarioOptions): Scenario {
  const trackPrefixes = o.countPrefixReuse === true;
  const s = benchScenario(o);
  const agents: Scenario["agents"] = {};
  for (const [name, script] of Object.entries(s.agents)) {
    agents[name] = (req: ScriptedRequest) => {
      const a = (promptByAgent[name] ??= { calls: 0, textChars: 0, imageChars: 0, reusedPrefixChars: 0, newLineChars: 0 });
      a.calls++;
      // Each text as sent (req.text joins them with newlines, which were not sent).
      const texts: string[] = [];
      for (const m of req.messages as Array<{ content: string | Array<{ type: string; text?: string }> }>) {
        if (typeof m.content === "string") texts.push(m.content);
        else for (const part of m.content) if (part.type === "text") texts.push(part.text ?? "");
      }
      for (const t of texts) a.textChars += t.length;
      if (trackPrefixes) {
        const sent = texts.join("\u0000");
        // The separators are not prompt characters: count only text the prefix covers.
        const reused = sentTexts.reduce((best, earlier) => Math.max(best, commonPrefix(sent, earlier)), 0);
        a.reusedPrefixChars += reused - (sent.slice(0, reused).split("\u0000").length - 1);
        sentTexts.push(sent);
        const lines = texts.flatMap((t) => t.split("\n"));
        for (const line of lines) if (!sentLines.has(line)) a.newLineChars += line.length;
        for (const line of lines) sentLines.add(line);
      }
      for (const url of req.images) a.imageChars += url.length;
      return typeof script === "function" ? (script as (r: ScriptedRequest) => unknown)(req) : script;
    };
  }
  return { ...s, agents };
}

const model = await startScriptedOpenAI({ scenario: counted({}) });
const search = await startScriptedTavily({});

function reply(msg: ChildReply): void {
  process.send!(msg);
}

process.on("message", (raw) => {
  const m = raw as ChildRequest;
  switch (m.type) {
    case "scenario":
      model.setScenario(counted(m.options));
      model.setPromptCache(m.options.promptCache ?? false);
      break;
    case "latency":
      model.setLatency(m.modelMs);
      search.setLatency(m.searchMs);
      break;
    case "reset":
      model.reset();
      search.reset();
      promptByAgent = {};
      sentTexts = [];
      sentLines = new Set();
      break;
    case "stats": {
      const s = model.stats();
      const t = search.stats();
      reply({
        id: m.id,
        type: "stats",
        model: { total: s.total, byAgent: s.byAgent, peakInFlight: s.peakInFlight, temperatures: s.log.map((l) => l.temperature), log: m.withLog ? s.log.map((l) => ({ agent: l.agent, start: l.start, end: l.end })) : [] },
        search: { total: t.total, peakInFlight: t.peakInFlight, log: m.withLog ? t.log.map((l) => ({ agent: "tavily", start: l.start, end: l.end })) : [] },
        promptByAgent: structuredClone(promptByAgent),
        cpuMicros: cpuMicros(),
      });
      return;
    }
    case "close":
      void Promise.all([model.close(), search.close()]).then(() => process.exit(0));
      return;
  }
  reply({ id: m.id, type: "ok", cpuMicros: cpuMicros() });
});

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

// If the bench dies, its IPC channel closes: do not outlive it.
process.on("disconnect", () => process.exit(0));

reply({ id: 0, type: "ready", modelBaseUrl: model.baseUrl, searchBaseUrl: search.baseUrl, cpuMicros: cpuMicros() });
