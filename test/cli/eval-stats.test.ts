import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runEval } from "../../src/eval/runner.js";
import { answerByItem, evalScenario, readItems, SAMPLES } from "../eval/eval-fixtures.js";
import { medmmvCli } from "../support/medmmv-cli.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";

const servers = useScriptedServers({ scenario: evalScenario({}) });
const input = path.join(SAMPLES, "medqa.jsonl");
let tmp: string;
const cli = (args: string[]) => medmmvCli(args, {}, "", undefined, { timeoutMs: 60_000 });

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-cli-stats-"));
  const items = await readItems("medqa", input);
  const config = servers.config();
  // Self-consistency, k = 3: the first two items get three right samples (vote share 1), the others two wrong of three (share 2/3, wrong).
  servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it, visit) => (items.indexOf(it) < 2 || visit === 1 ? "gold" : "wrong")) }));
  await runEval({ dataset: "medqa", input, method: "self-consistency", pipeline: { k: 3 }, out: path.join(tmp, "sc") }, { config, progress: null });
  servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "wrong") }));
  await runEval({ dataset: "medqa", input, method: "cot", out: path.join(tmp, "cot") }, { config, progress: null });
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("medmmv eval calibrate and eval report --out", () => {
  it("calibrate proposes the vote-share threshold for a target risk and says it is tuned on that run", async () => {
    const r = await cli(["eval", "calibrate", path.join(tmp, "sc"), "--target-risk", "0.1"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/act when vote share ≥\s+\|\s+1\.000 \|/);
    expect(r.stdout).toMatch(/coverage \(%\)\s+\|\s+50\.0 \|/);
    expect(r.stdout).toMatch(/risk on the kept records \(%\)\s+\|\s+0\.0 \(0 \/ 2\) \|/);
    expect(r.stdout).toMatch(/Tuned on this run's 4 records/);
    // 0 errors of 2 kept: Wilson's upper end (65.8 %) is far above 10 %.
    expect(r.stdout).toMatch(/upper end of the risk's interval \(65\.8 %\) is above the target/);

    const json = await cli(["eval", "calibrate", path.join(tmp, "sc"), "--target-risk", "0.1", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ source: "vote share", records: 4, targetRisk: 0.1, proposal: { threshold: 1, coverage: 0.5, kept: 2, errors: 0 } });

    const bad = await cli(["eval", "calibrate", path.join(tmp, "sc"), "--target-risk", "2"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/expected a number in \[0, 1\)/);
    // CoT has no confidence: nothing to calibrate, said so, non-zero exit.
    const none = await cli(["eval", "calibrate", path.join(tmp, "cot"), "--target-risk", "0.1"]);
    expect(none.code).not.toBe(0);
    expect(none.stdout).toMatch(/No record carries an answerSupport: nothing to calibrate/);
  });

  it("report --out writes report.md, report.json and summary.html with the paired comparison", async () => {
    const out = path.join(tmp, "report");
    const r = await cli(["eval", "report", path.join(tmp, "sc"), path.join(tmp, "cot"), "--out", out]);
    expect(r.code).toBe(0);
    // Self-consistency right on 2 items CoT got wrong: 2 discordant one way, none the other; McNemar p = 2·(½)² = 0.5.
    const row = r.stdout.split("\n").find((l) => l.startsWith("| sc − cot "))!.split("|").map((c) => c.trim());
    expect(row.slice(1, 9)).toEqual(["sc − cot", "4", "4", "50.0 vs 0.0", "+50.0", row[6], "2 / 0", "0.5000"]);
    expect(row[6]).toMatch(/^\[\d+\.\d–\d+\.\d\]$/);
    expect(r.stdout).toMatch(/settings differ: method; config/);
    // The confidence rows: self-consistency has a vote share, CoT none.
    expect(r.stdout).toMatch(/\| AURC\s+\|\s+0\.\d{3} \[[\d.]+–[\d.]+\] \|\s+— \|/);
    expect(await readFile(path.join(out, "report.md"), "utf8")).toBe(r.stdout);
    const json = JSON.parse(await readFile(path.join(out, "report.json"), "utf8")) as { paired: { entries: Array<{ comparison: { mcnemar: { b: number; c: number } } }> } };
    expect(json.paired.entries[0]!.comparison.mcnemar).toMatchObject({ b: 2, c: 0 });
    const html = await readFile(path.join(out, "summary.html"), "utf8");
    expect(html).toContain('data-plot="paired-differences"');
    expect(html).toContain("<svg");
    expect(html).toContain("default-src 'none'");
  });
});
