import type { ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../src/eval/conversation/run-conversation-eval.js";
import type { EvalSummary } from "../../src/eval/summary.js";
import { readResults } from "../../src/eval/results-file.js";
import { medmmvCli } from "../support/medmmv-cli.js";
import type { ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { until } from "../support/until.js";
import { conversationScenario } from "../eval/conversation/conversation-scenario.js";
import { useTempDir } from "../eval/datasets/dataset-kit.js";
import { fakeImages } from "../eval/eval-fixtures.js";

const DRLLAVA = fileURLToPath(new URL("../eval/conversation/fixtures/drllava-synthetic.json", import.meta.url));
const servers = useScriptedServers({ scenario: conversationScenario() });
const tmp = useTempDir("medmmv-cli-conv-resume-");
let images: string;
beforeAll(async () => {
  images = path.join(tmp(), "images");
  await fakeImages(images, ["test1.jpeg", "test2.jpeg", "test3.jpeg"]);
});

const env = () => ({ OPENAI_BASE_URL: servers.model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_LOG_LEVEL: "silent", MEDMMV_CACHE: "off" });
const args = (out: string) => ["eval", "--dataset", "drllava", "--input", DRLLAVA, "--images", images, "--method", "cot", "--runs", "2", "--concurrency", "2", "--seed", "5", "--out", out];

async function records(out: string): Promise<{ records: ConversationRecord[]; lines: number }> {
  const r = await readResults(path.join(out, "results.jsonl"));
  return { records: r.records as ConversationRecord[], lines: r.lines };
}
const keyOf = (r: { id: string; run: number }) => `${r.id}/${r.run}`;

describe("medmmv eval --dataset drllava --resume (CLI)", () => {
  it("kill -9 mid-run, --resume: every conversation is finished exactly once, and the model is asked only the unfinished ones' turns", async () => {
    const whole = path.join(tmp(), "whole");
    const w = await medmmvCli(args(whole), env());
    expect(w.code).toBe(0);
    // cot asks one turn-answer per turn and nothing else.
    const uninterrupted = servers.model.stats().total;
    const turnsOf = new Map((await records(whole)).records.map((r) => [keyOf(r), r.conversation.turns.length]));
    expect(turnsOf.size).toBe(18);
    expect(uninterrupted).toBe([...turnsOf.values()].reduce((a, b) => a + b, 0));

    const out = path.join(tmp(), "killed");
    servers.model.reset();
    const base = conversationScenario();
    const answer = base.agents["turn-answer"] as (req: ScriptedRequest) => unknown;
    let child: ChildProcess | undefined;
    let seen = 0;
    servers.model.setScenario({
      ...base,
      agents: {
        ...base.agents,
        "turn-answer": (req: ScriptedRequest) => {
          if (++seen === 40) child?.kill("SIGKILL");
          return answer(req);
        },
      },
    });
    const killed = await medmmvCli(args(out), env(), "", (c) => (child = c));
    expect(killed.signal).toBe("SIGKILL");
    await until(() => (servers.model.stats().inFlight === 0 ? true : undefined), 10_000, "the killed run's calls to end");
    const kept = (await records(out)).records.map(keyOf);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(18);
    const unfinished = [...turnsOf.keys()].filter((k) => !kept.includes(k));

    servers.model.reset();
    servers.model.setScenario(conversationScenario());
    const resumed = await medmmvCli([...args(out), "--resume"], env());
    expect(resumed.code).toBe(0);
    expect(servers.model.stats().total).toBe(unfinished.reduce((n, k) => n + turnsOf.get(k)!, 0));
    expect(resumed.stderr).toMatch(/\[eval\] finished 18\/18 · acc 100\.0%/);
    const done = await records(out);
    // One line per conversation: nothing the killed run finished was asked or written again.
    expect(done.lines).toBe(18);
    expect(done.records.map(keyOf).sort()).toEqual([...turnsOf.keys()].sort());
    const a = JSON.parse(await readFile(path.join(whole, "summary.json"), "utf8")) as EvalSummary;
    const b = JSON.parse(await readFile(path.join(out, "summary.json"), "utf8")) as EvalSummary;
    expect(b.conversation).toEqual(a.conversation);
    expect(b).toMatchObject({ records: 18, failed: 0, complete: true });

    // Resuming with another order set is refused, naming what changed.
    const changed = await medmmvCli([...args(out), "--order", "si", "--resume"], env());
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/\[CONFLICT\] --resume: .* was produced with a different configuration.*config: was .*"orders":\["si","df","ii"\].*now .*"orders":\["si"\]/);
  });
});
