/**
 * Child process hosting the scripted model and search servers, so that their CPU time is
 * not counted against the pipeline in the overhead benchmark, and the two processes use
 * both cores the way a real client and a real provider would. Driven over IPC.
 */
import { startScriptedOpenAI } from "../../test/support/scripted-openai-server.js";
import { startScriptedTavily } from "../../test/support/scripted-tavily-server.js";
import { benchScenario } from "./bench-scenario.js";
import type { ChildReply, ChildRequest } from "./servers.js";

const model = await startScriptedOpenAI({ scenario: benchScenario() });
const search = await startScriptedTavily({});

function reply(msg: ChildReply): void {
  process.send!(msg);
}

process.on("message", (raw) => {
  const m = raw as ChildRequest;
  switch (m.type) {
    case "scenario":
      model.setScenario(benchScenario(m.options));
      break;
    case "latency":
      model.setLatency(m.modelMs);
      search.setLatency(m.searchMs);
      break;
    case "reset":
      model.reset();
      search.reset();
      break;
    case "stats": {
      const s = model.stats();
      const t = search.stats();
      reply({
        id: m.id,
        type: "stats",
        model: { total: s.total, byAgent: s.byAgent, peakInFlight: s.peakInFlight, temperatures: s.log.map((l) => l.temperature), log: m.withLog ? s.log.map((l) => ({ agent: l.agent, start: l.start, end: l.end })) : [] },
        search: { total: t.total, peakInFlight: t.peakInFlight },
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

reply({ id: 0, type: "ready", modelBaseUrl: model.baseUrl, searchBaseUrl: search.baseUrl, cpuMicros: cpuMicros() });
