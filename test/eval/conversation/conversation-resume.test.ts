import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { runConversationEval, type ConversationEvalOptions } from "../../../src/eval/conversation/run-conversation-eval.js";
import { readManifest } from "../../../src/eval/manifest.js";
import type { ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { until } from "../../support/until.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { fakeImages } from "../eval-fixtures.js";
import { conversationScenario, recordsOf } from "./conversation-scenario.js";

const DRLLAVA = fileURLToPath(new URL("./fixtures/drllava-synthetic.json", import.meta.url));
const servers = useScriptedServers({ scenario: conversationScenario() });
const tmp = useTempDir("medmmv-conv-resume-");
let images: string;
let n = 0;
beforeAll(async () => {
  images = path.join(tmp(), "images");
  await fakeImages(images, ["test1.jpeg", "test2.jpeg", "test3.jpeg"]);
});

const opts = (over: Partial<ConversationEvalOptions> = {}): ConversationEvalOptions => ({ dataset: "drllava", input: DRLLAVA, images, method: "medmmv", pipeline: { k: 1, maxRepairs: 1 }, seed: 3, out: path.join(tmp(), `run-${++n}`), ...over });

/** The conversation scenario, with the run's signal aborted when the model receives its n-th turn question. */
function abortingAtTurn(at: number, ctrl: AbortController) {
  const base = conversationScenario();
  const answer = base.agents["turn-answer"] as (req: ScriptedRequest) => unknown;
  let seen = 0;
  return {
    ...base,
    agents: {
      ...base.agents,
      "turn-answer": (req: ScriptedRequest) => {
        if (++seen === at) ctrl.abort();
        return answer(req);
      },
    },
  };
}

describe("conversation evals resume, repeat and run in parallel like the item runner", () => {
  it("concurrency 1 and 8 give the same metrics, and the case's pipeline runs once per item and run however its orders interleave", async () => {
    const one = await runConversationEval(opts({ concurrency: 1, runs: 2 }), { config: servers.config() });
    const serial = servers.model.stats().byAgent;
    servers.model.reset();
    const eight = await runConversationEval(opts({ concurrency: 8, runs: 2 }), { config: servers.config() });
    expect(eight.summary.conversation).toEqual(one.summary.conversation);
    expect(eight.summary).toMatchObject({ records: 18, items: 9, failed: 0, accuracy: one.summary.accuracy, complete: true });
    expect(one.summary.conversation?.si).toMatchObject({ aQ: 1, aC: 1, hCC: 0, conversations: 6 });
    // 3 items × 2 runs, k = 1: six rollouts either way; every turn question asked once.
    expect(servers.model.stats().byAgent["rollout"]).toBe(6);
    expect(servers.model.stats().byAgent["turn-answer"]).toBe(serial["turn-answer"]);
    const { records, lines } = await recordsOf(eight.dir);
    expect(lines).toBe(18);
    expect(records.map((r) => `${r.id}/${r.run}`).sort()).toEqual(["test1", "test2", "test3"].flatMap((id) => ["df", "ii", "si"].flatMap((o) => [0, 1].map((run) => `${id}@${o}/${run}`))).sort());
    // The shared pipeline run is paid once per (item, run): on exactly one of its three records.
    const paidRollouts = records.filter((r) => (r.usage.byAgent["rollout"]?.calls ?? 0) > 0).map((r) => `${r.id.split("@")[0]}/${r.run}`);
    expect(paidRollouts.sort()).toEqual(["test1/0", "test1/1", "test2/0", "test2/1", "test3/0", "test3/1"]);
  });

  it("stopped mid-run, --resume asks only the unfinished conversations, each recorded exactly once, over the evidence the finished ones kept", async () => {
    const whole = await runConversationEval(opts({ concurrency: 2 }), { config: servers.config() });
    const turnsOf = new Map((await recordsOf(whole.dir)).records.map((r) => [r.id, r.conversation.turns.length]));
    const out = path.join(tmp(), `stopped-${++n}`);
    servers.model.reset();
    const ctrl = new AbortController();
    // Two conversations at a time, five turns each: the 11th turn question is asked only once one of
    // test1's first two conversations is recorded, and test1@ii cannot finish by the 13th.
    servers.model.setScenario(abortingAtTurn(13, ctrl));
    const first = await runConversationEval(opts({ concurrency: 2, out }), { config: servers.config(), signal: ctrl.signal });
    expect(first.interrupted).toBe(true);
    await until(() => (servers.model.stats().inFlight === 0 ? true : undefined), 10_000, "the stopped run's calls to end");
    const kept = (await recordsOf(out)).records;
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(9);
    expect(kept.every((r) => r.status === "completed")).toBe(true);
    const left = [...turnsOf.keys()].filter((id) => !kept.some((r) => r.id === id));
    // An item with a finished conversation kept its pipeline's evidence on the record that paid for it.
    const untouched = ["test1", "test2", "test3"].filter((id) => !kept.some((r) => r.id.startsWith(`${id}@`)));
    expect(kept.filter((r) => r.caseEvidence).map((r) => r.id.split("@")[0]).sort()).toEqual(["test1", "test2", "test3"].filter((id) => !untouched.includes(id)));

    servers.model.reset();
    servers.model.setScenario(conversationScenario());
    const second = await runConversationEval(opts({ concurrency: 2, out, resume: true }), { config: servers.config() });
    expect(second.written).toBe(left.length);
    expect(servers.model.stats().byAgent["turn-answer"]).toBe(left.reduce((s, id) => s + turnsOf.get(id)!, 0));
    // Only items with nothing finished run the pipeline again; the others answer over the kept evidence.
    expect(servers.model.stats().byAgent["rollout"] ?? 0).toBe(untouched.length);
    expect(left.some((id) => !untouched.includes(id.split("@")[0]!))).toBe(true);
    const { records, lines } = await recordsOf(out);
    expect(lines).toBe(9);
    expect(records).toHaveLength(9);
    expect(second.summary.conversation).toEqual(whole.summary.conversation);
    expect(second.summary).toMatchObject({ items: 9, failed: 0, complete: true });

    // Resumed again once complete: nothing left to ask.
    servers.model.reset();
    const third = await runConversationEval(opts({ concurrency: 2, out, resume: true }), { config: servers.config() });
    expect(third.written).toBe(0);
    expect(servers.model.stats().total).toBe(0);
  });

  it("a folder with results needs --resume, and --resume refuses changed settings, naming them", async () => {
    const out = path.join(tmp(), `settings-${++n}`);
    await runConversationEval(opts({ method: "cot", orders: ["si"], out }), { config: servers.config() });
    servers.model.reset();
    await expect(runConversationEval(opts({ method: "cot", orders: ["si"], out }), { config: servers.config() })).rejects.toMatchObject({ code: "CONFLICT", message: expect.stringMatching(/already holds results \(3 items × 1 run = 3 item-runs\); pass --resume/) });
    const changes: Array<[Partial<ConversationEvalOptions>, RegExp]> = [
      [{ method: "medmmv", orders: ["si"] }, /different configuration.*method: was "cot", now "medmmv"/],
      [{ method: "cot", orders: ["si", "df"] }, /different configuration.*config: was .*"orders":\["si"\].*now .*"orders":\["si","df"\]/],
      [{ method: "cot", orders: ["si"], seed: 4 }, /different configuration.*config: was .*"seed":3.*now .*"seed":4/],
      [{ method: "cot", orders: ["si"], dataset: "conversation", input: fileURLToPath(new URL("./fixtures/conversation-synthetic.jsonl", import.meta.url)) }, /different configuration.*: dataset: was "drllava", now "conversation"; input/],
    ];
    for (const [change, message] of changes)
      await expect(runConversationEval(opts({ ...change, out, resume: true }), { config: servers.config() })).rejects.toMatchObject({ code: "CONFLICT", message: expect.stringMatching(message) });
    expect(servers.model.stats().total).toBe(0);
    // The folder is untouched by the refusals: the same settings still resume (nothing left to do).
    const same = await runConversationEval(opts({ method: "cot", orders: ["si"], out, resume: true }), { config: servers.config() });
    expect(same).toMatchObject({ written: 0, summary: { items: 3, failed: 0 } });
  });

  it("--resume refuses an input file whose bytes changed since the run began, naming both hashes", async () => {
    const input = path.join(tmp(), `drllava-copy-${++n}.json`);
    await writeFile(input, await readFile(DRLLAVA, "utf8"));
    const out = path.join(tmp(), `changed-${n}`);
    await runConversationEval(opts({ method: "cot", orders: ["si"], input, out }), { config: servers.config() });
    const before = (await readManifest(out))!.inputFile!;
    await writeFile(input, (await readFile(input, "utf8")) + "\n");
    servers.model.reset();
    const err = await runConversationEval(opts({ method: "cot", orders: ["si"], input, out, resume: true }), { config: servers.config() }).catch((e: unknown) => e as Error);
    expect(err).toMatchObject({ code: "CONFLICT", message: expect.stringContaining(`sha256 was ${before.sha256} (${before.bytes} bytes), now `) });
    expect((err as Error).message).toContain(`(${before.bytes + 1} bytes)`);
    expect(servers.model.stats().total).toBe(0);
  });

  it("--resume refuses a pathway whose definition changed since the run began, though its id is the same", async () => {
    const bone = JSON.parse(await readFile(fileURLToPath(new URL("../../../pathways/bone-marrow.json", import.meta.url)), "utf8")) as { title: string };
    const line = (pathway: unknown) => JSON.stringify({ id: "inline", images: ["test1.jpeg"], pathway, turns: [{ question: "What is the diagnosis?", step: "diagnosis", expected: "aml" }] }) + "\n";
    const input = path.join(tmp(), `inline-${++n}.jsonl`);
    await writeFile(input, line(bone));
    const out = path.join(tmp(), `pathway-${n}`);
    const first = await runConversationEval(opts({ dataset: "conversation", input, method: "cot", orders: ["si"], out }), { config: servers.config() });
    expect(first.summary).toMatchObject({ records: 1, failed: 0 });
    await writeFile(input, line({ ...bone, title: `${bone.title} (edited)` }));
    await expect(runConversationEval(opts({ dataset: "conversation", input, method: "cot", orders: ["si"], out, resume: true }), { config: servers.config() })).rejects.toMatchObject({
      code: "CONFLICT",
      message: expect.stringMatching(/different configuration.*config: was .*"pathways":\{"bone-marrow":"sha256:[0-9a-f]{64}"\}.*now .*"pathways":\{"bone-marrow":"sha256:/),
    });
  });

  it("bad --runs and --concurrency are clear input errors", async () => {
    await expect(runConversationEval(opts({ runs: 0 }), { config: servers.config() })).rejects.toMatchObject({ code: "INVALID_INPUT", message: "--runs must be an integer ≥ 1" });
    await expect(runConversationEval(opts({ concurrency: 1.5 }), { config: servers.config() })).rejects.toMatchObject({ code: "INVALID_INPUT", message: "--concurrency must be an integer ≥ 1" });
  });

  it("with a response cache, --runs 2 makes two fresh draws: run 1 is never run 0's replay, and a second eval of the same items is fresh too", async () => {
    const stored = new Map<string, Record<string, unknown>>();
    const cache = { get: async (k: string) => stored.get(k) ?? null, put: async (k: string, v: Record<string, unknown>) => void stored.set(k, v) };
    servers.model.reset();
    await runConversationEval(opts({ concurrency: 2, runs: 1 }), { config: servers.config({ MEDMMV_CACHE: "all" }), cache });
    expect(servers.model.stats().total).toBeGreaterThan(0);
    // Counted in distinct requests (cache keys), not model calls: two identical requests of one run that happen to
    // be in flight together both reach the model, one after the other the second is that run's own cache hit —
    // timing, not freshness. A replay across runs or evals would add no key; fresh draws add a full set each.
    const once = stored.size;
    expect(once).toBeGreaterThan(0);
    servers.model.reset();
    await runConversationEval(opts({ concurrency: 2, runs: 2 }), { config: servers.config({ MEDMMV_CACHE: "all" }), cache });
    expect(stored.size).toBe(3 * once);
    expect(servers.model.stats().total).toBeGreaterThanOrEqual(2 * once);
  });
});
