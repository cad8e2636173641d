import type { ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { runEval } from "../../src/eval/runner.js";
import type { EvalSummary } from "../../src/eval/summary.js";
import { answerByItem, evalScenario, readItems, SAMPLES } from "../eval/eval-fixtures.js";
import { medmmvCli, type MedmmvCliRun } from "../support/medmmv-cli.js";

interface Child {
  done: Promise<MedmmvCliRun>;
  kill(signal: NodeJS.Signals): void;
}

/** `medmmv eval …` as a user runs it (medmmvCli), with a handle to kill it mid-run. */
function medmmv(args: string[], env: Record<string, string> = {}): Child {
  let child: ChildProcess | undefined;
  const done = medmmvCli(args, env, "", (c) => (child = c), { timeoutMs: 60_000 });
  return { done, kill: (s) => child!.kill(s) };
}

const servers = useScriptedServers({ scenario: evalScenario({}) });
let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-cli-eval-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const endpoint = () => ({ OPENAI_BASE_URL: servers.model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_LLM_BACKOFF_BASE_MS: "5", MEDMMV_CACHE: "off", MEDMMV_LOG_LEVEL: "silent" });

/** A MedQA-format file of our own, big enough to kill a run in the middle of it. */
async function syntheticMedqa(n: number): Promise<string> {
  const file = path.join(tmp, `synthetic-${n}.jsonl`);
  const rows = Array.from({ length: n }, (_, i) => ({
    question: `Synthetic case ${i}: a patient with finding number ${i} presents to clinic. Which option is keyed as correct?`,
    options: { A: `alpha ${i}`, B: `bravo ${i}`, C: `charlie ${i}`, D: `delta ${i}` },
    answer_idx: "ABCD"[i % 4],
    answer: `${["alpha", "bravo", "charlie", "delta"][i % 4]} ${i}`,
    meta_info: i % 2 ? "step1" : "step2&3",
  }));
  await writeFile(file, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return file;
}

const validLines = async (file: string) =>
  (await readFile(file, "utf8").catch(() => ""))
    .split("\n")
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as { id: string; run: number; status: string }];
      } catch {
        return [];
      }
    });

describe("medmmv eval (CLI)", () => {
  it("without an endpoint: exit 2 naming the variables, no model call", async () => {
    const r = await medmmv(["eval", "--dataset", "medqa", "--input", path.join(SAMPLES, "medqa.jsonl"), "--out", path.join(tmp, "never")]).done;
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/MEDMMV_MODEL/);
    expect(servers.model.stats().total).toBe(0);
  });

  it("SIGKILLed mid-run, then --resume: each (item, run) exactly once, nothing finished is rerun", async () => {
    const input = await syntheticMedqa(8);
    const items = await readItems("medqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    servers.model.setLatency(120);
    const out = path.join(tmp, "killed");
    const results = path.join(out, "results.jsonl");
    const args = ["eval", "--dataset", "medqa", "--input", input, "--method", "cot", "--runs", "2", "--concurrency", "2", "--out", out];

    const child = medmmv(args, endpoint());
    const deadline = Date.now() + 45_000;
    while ((await validLines(results)).length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 15));
    child.kill("SIGKILL");
    const killed = await child.done;
    expect(killed.signal).toBe("SIGKILL");
    const before = await validLines(results);
    expect(before.length).toBeGreaterThanOrEqual(4);
    expect(before.length).toBeLessThan(16); // really killed mid-way
    await expect(stat(path.join(out, "summary.json"))).rejects.toThrow();

    servers.model.reset();
    servers.model.setLatency(5);
    const resumed = await medmmv([...args, "--resume"], endpoint()).done;
    expect(resumed.stderr).not.toMatch(/Error|\[INTERNAL\]/);
    expect(resumed.code).toBe(0);
    // Items in flight at the kill were lost, not half-recorded: exactly the unfinished ones ran again.
    expect(servers.model.stats().byAgent["cot"]).toBe(16 - before.length);
    const after = await validLines(results);
    const keys = after.map((r) => `${r.id}#${r.run}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.sort()).toEqual(items.flatMap((it) => [`${it.id}#0`, `${it.id}#1`]).sort());
    const summary = JSON.parse(await readFile(path.join(out, "summary.json"), "utf8")) as EvalSummary;
    expect(summary).toMatchObject({ items: 8, runs: 2, records: 16, accuracy: 1, failed: 0, complete: true });
    expect(resumed.stdout).toMatch(/\| accuracy \(%\)\s+\| 100\.0 \[[\d.]+–100\.0\] ± 0\.0 sd/);
  });

  it("logs progress without patient text off a terminal; with the cache on, a re-run asked to replay the first is served from its folder, also from a fresh data dir", async () => {
    const input = path.join(SAMPLES, "medmcqa.jsonl");
    const items = await readItems("medmcqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    const env = { ...endpoint(), MEDMMV_CACHE: "deterministic", MEDMMV_DATA_DIR: path.join(tmp, "data") };
    const first = await medmmv(["eval", "--dataset", "medmcqa", "--input", input, "--method", "cot", "--out", path.join(tmp, "cache-1")], env).done;
    expect(first.code).toBe(0);
    expect(servers.model.stats().total).toBe(items.length);
    const lines = first.stderr.split("\n").filter((l) => l.startsWith("[eval]"));
    expect(lines.at(-1)).toMatch(new RegExp(`^\\[eval\\] finished ${items.length}/${items.length} · acc 100\\.0%`));
    for (const it of items) {
      expect(first.stderr).not.toContain(it.case.question.slice(0, 30));
      expect(first.stderr).not.toContain(it.gold.text);
    }
    expect(first.stderr).not.toContain("\r");
    // The default item concurrency follows the provider budget, and says so at the start.
    expect(first.stderr).toMatch(/^medmmv eval: \d+ items in flight \(MEDMMV_MAX_CONCURRENCY=\d+; --concurrency N to change\)/m);

    // Another machine: a data dir that never saw the first run. The folder alone replays it.
    const fresh = { ...env, MEDMMV_DATA_DIR: path.join(tmp, "data-fresh") };
    const second = await medmmv(["eval", "--dataset", "medmcqa", "--input", input, "--method", "cot", "--out", path.join(tmp, "cache-2"), "--replay-cache", path.join(tmp, "cache-1"), "--json"], fresh).done;
    expect(second.code).toBe(0);
    expect(servers.model.stats().total).toBe(items.length); // no new calls
    const s = JSON.parse(second.stdout) as EvalSummary;
    expect(s).toMatchObject({ accuracy: 1, items: items.length, runsFromCache: [0] });
    expect(s.usage.total.llmCalls).toBe(0);
    expect(await readFile(path.join(tmp, "cache-2", "summary.md"), "utf8")).toMatch(/^> Served wholly from the response cache/m);
  });

  it("--cache all turns the store's response cache on over MEDMMV_CACHE=off: the replaying re-run makes no model call, also with the items in two processes", async () => {
    const input = path.join(SAMPLES, "medmcqa.jsonl");
    const items = await readItems("medmcqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    servers.model.reset();
    const env = { ...endpoint(), MEDMMV_DATA_DIR: path.join(tmp, "data-flag") };
    // The full method: its rollouts sample at 0.7, so only `all` (not `deterministic`) serves them again.
    const args = (out: string) => ["eval", "--dataset", "medmcqa", "--input", input, "--k", "2", "--cache", "all", "--out", path.join(tmp, out), "--json"];
    const first = await medmmv(args("flag-1"), env).done;
    expect(first.code).toBe(0);
    const paid = servers.model.stats().total;
    expect(paid).toBeGreaterThan(2 * items.length);
    const second = await medmmv([...args("flag-2"), "--replay-cache", path.join(tmp, "flag-1")], env).done;
    expect(second.code).toBe(0);
    expect(servers.model.stats().total).toBe(paid);
    expect((JSON.parse(second.stdout) as EvalSummary).usage.total.llmCalls).toBe(0);
    // --workers: the item processes (this CLI again, `eval-worker`) ask the store's cache through it; stdout stays the summary's.
    const third = await medmmv([...args("flag-3"), "--replay-cache", path.join(tmp, "flag-1"), "--workers", "2"], env).done;
    expect(third.code).toBe(0);
    expect(third.stderr).toMatch(new RegExp(`2 item processes answered [1-9]\\d* \\+ [1-9]\\d* items`));
    expect(servers.model.stats().total).toBe(paid);
    expect(JSON.parse(third.stdout) as EvalSummary).toMatchObject({ accuracy: 1, records: items.length, usage: { total: { llmCalls: 0 } } });
  });

  it("eval report prints the runs side by side with deltas", async () => {
    const input = path.join(SAMPLES, "medxpertqa_text.jsonl");
    const items = await readItems("medxpertqa", input);
    const config = servers.config();
    // MedMMV right on every item; CoT right on the first item only; MedMMV without HD right on two.
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    await runEval({ dataset: "medxpertqa", input, out: path.join(tmp, "r-medmmv"), pipeline: { k: 2 } }, { config });
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it) => (it.id === items[0]!.id ? "gold" : "wrong")) }));
    await runEval({ dataset: "medxpertqa", input, out: path.join(tmp, "r-cot"), method: "cot" }, { config });
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it) => (items.indexOf(it) < 2 ? "gold" : "wrong")) }));
    await runEval({ dataset: "medxpertqa", input, out: path.join(tmp, "r-nohd"), pipeline: { k: 2, ablations: { noHd: true } } }, { config });

    const r = await medmmv(["eval", "report", path.join(tmp, "r-medmmv"), path.join(tmp, "r-cot"), path.join(tmp, "r-nohd")]).done;
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const row = (name: string) =>
      r.stdout
        .split("\n")
        .find((l) => l.startsWith(`| ${name} `))
        ?.split("|")
        .slice(2, -1)
        .map((c) => c.trim());
    expect(row("")).toEqual(["r-medmmv", "r-cot", "r-nohd"]);
    expect(row("method")).toEqual(["medmmv", "cot", "medmmv (no-hd)"]);
    const n = items.length;
    const pct = (k: number) => ((k / n) * 100).toFixed(1);
    const delta = (k: number) => `-${(100 - (k / n) * 100).toFixed(1)}`;
    expect(row("accuracy (%)")!.map((c) => c.replace(/ \[[\d.]+–[\d.]+\]/, ""))).toEqual(["100.0", `${pct(1)} (${delta(1)})`, `${pct(2)} (${delta(2)})`]);
    // Every pair, paired: MedMMV right where CoT was wrong on n − 1 items; Holm over the three pairs.
    expect(r.stdout).toMatch(/## Paired comparison/);
    const pair = r.stdout.split("\n").find((l) => l.startsWith("| r-medmmv − r-cot "))!.split("|").map((c) => c.trim());
    expect(pair[7]).toBe(`${n - 1} / 0`);
    expect(r.stdout).toMatch(/corrected for multiple comparisons by Holm's method/);
    expect(row("model calls / item")![1]).toMatch(/^1\.0 \(-/);
    expect(row("hallucinations / item")).toEqual(["0.00", "—", "—"]);
    // Every body system of the sample has its own row.
    for (const it of items) expect(r.stdout).toContain(`body_system = ${it.strata["body_system"]}`);
  });
});
