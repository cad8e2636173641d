import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HEALTHBENCH_DIR, healthbenchScenario } from "../support/healthbench-scenario.js";
import { medmmvCli } from "../support/medmmv-cli.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";

/** `medmmv eval --dataset healthbench` as a user runs it, over the synthetic fixtures and the scripted grader. */
const servers = useScriptedServers({ scenario: healthbenchScenario() });
let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-cli-healthbench-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("medmmv eval --dataset healthbench (CLI)", () => {
  it("prints the overall score and the theme and axis breakdowns with their intervals", async () => {
    const env = { OPENAI_BASE_URL: servers.model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_CACHE: "off", MEDMMV_LOG_LEVEL: "silent" };
    const r = await medmmvCli(["eval", "--dataset", "healthbench", "--input", path.join(HEALTHBENCH_DIR, "healthbench-synthetic.jsonl"), "--method", "cot", "--out", path.join(tmp, "hb")], env, "", undefined, { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("## HealthBench (rubric-graded)");
    expect(r.stdout).toMatch(/\| overall\s+\|\s+4 \|\s+45\.8 \|\s+\[\d+\.\d–\d+\.\d\] \|/);
    for (const row of ["theme: context_seeking", "theme: emergency_referrals", "theme: communication", "axis: accuracy", "axis: completeness", "axis: context_awareness", "axis: communication_quality"])
      expect(r.stdout, row).toMatch(new RegExp(`\\| ${row}\\s+\\|\\s+\\d \\|\\s+\\d+\\.\\d \\|\\s+\\[\\d+\\.\\d–\\d+\\.\\d\\] \\|`));
    expect(servers.model.stats().byAgent["rubric-grader"]).toBe(15);
  });

  it("grades the same in two item processes (each item's rubric crosses with it)", async () => {
    const env = { OPENAI_BASE_URL: servers.model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_CACHE: "off", MEDMMV_LOG_LEVEL: "silent" };
    const r = await medmmvCli(["eval", "--dataset", "healthbench", "--input", path.join(HEALTHBENCH_DIR, "healthbench-synthetic.jsonl"), "--method", "cot", "--workers", "2", "--out", path.join(tmp, "hb-workers")], env, "", undefined, { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/2 item processes answered [1-9]\d* \+ [1-9]\d* items/);
    expect(r.stdout).toMatch(/\| overall\s+\|\s+4 \|\s+45\.8 \|\s+\[\d+\.\d–\d+\.\d\] \|/);
    expect(servers.model.stats().byAgent["rubric-grader"]).toBe(15);
  });
});
