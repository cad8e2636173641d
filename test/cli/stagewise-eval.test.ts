import type { ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import type { EvalItem } from "../../src/eval/datasets/types.js";
import type { EvalSummary } from "../../src/eval/summary.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { stagewiseScenario } from "../support/stagewise-scenario.js";
import { readResults } from "../../src/eval/results-file.js";
import type { ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";
import { until } from "../support/until.js";
import { useTempDir } from "../eval/datasets/dataset-kit.js";
import { paidFor } from "../eval/stagewise/clinhallu-fixture.js";
import { readItems } from "../eval/eval-fixtures.js";
import { medmmvCli } from "../support/medmmv-cli.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const GOLD = "examples/clinhallu/gold_cot.jsonl";
const IMAGES = "examples/clinhallu/images";
const servers = useScriptedServers();
const tmp = useTempDir("medmmv-cli-stagewise-");
let items: EvalItem[];
beforeAll(async () => {
  items = await readItems("clinhallu", path.join(ROOT, GOLD), { imagesDir: path.join(ROOT, IMAGES) });
});

/** The command as a researcher types it, configured by its environment alone; `started` gets the child. */
function medmmv(args: string[], started?: (child: ChildProcess) => void) {
  const env = { OPENAI_BASE_URL: servers.model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_JUDGE_MODEL: "scripted-judge", MEDMMV_CACHE: "off", MEDMMV_LOG_LEVEL: "silent" };
  return medmmvCli(args, env, "", started, { timeoutMs: 120_000 });
}

describe("medmmv eval --dataset clinhallu --method stagewise (CLI)", () => {
  it("runs both trace formats on the bundled fixtures, and eval report sets them side by side", async () => {
    servers.model.setScenario(stagewiseScenario(items));
    const a = path.join(tmp(), "structured");
    const b = path.join(tmp(), "text");
    const r1 = await medmmv(["eval", "--dataset", "clinhallu", "--input", GOLD, "--images", IMAGES, "--method", "stagewise", "--out", a]);
    expect(r1.stderr).not.toMatch(/\[[A-Z_]+\]/);
    expect(r1.code).toBe(0);
    expect(r1.stdout).toContain("## Stage-wise diagnosis (ClinHallu)");
    const r2 = await medmmv(["eval", "--dataset", "clinhallu", "--input", GOLD, "--images", IMAGES, "--method", "stagewise", "--trace-format", "text", "--replace", "K,VK", "--out", b]);
    expect(r2.code).toBe(0);
    const s2 = JSON.parse(await readFile(path.join(b, "summary.json"), "utf8")) as EvalSummary;
    expect(s2.stagewise).toMatchObject({ format: "text", acc: 1, hV: 0, hK: null, hR: 0, hFrom: { hK: "none" } });
    expect(Object.keys(s2.stagewise!.rep).sort()).toEqual(["K", "VK"]);
    const rep = await medmmv(["eval", "report", a, b]);
    expect(rep.code).toBe(0);
    expect(rep.stdout).toContain("### Answer accuracy (ClinHallu Table 2)");
    expect(rep.stdout).toContain("### Stage hallucination (ClinHallu Table 3)");
    expect(rep.stdout).toMatch(/\| structured \| stagewise \(structured, rep V,K,VK\) \| clinhallu \| +100\.0 \| +\+0\.0 \| +\+0\.0 \| +\+0\.0 \|/);
    expect(rep.stdout).toMatch(/\| text +\| stagewise \(text, rep K,VK\) +\| clinhallu \| +100\.0 \| +- \| +\+0\.0 \| +\+0\.0 \|/);
    expect(rep.stdout).toContain("### Fix and Break (paper Eq. 15)");
    const exported = path.join(tmp(), "exported");
    const ex = await medmmv(["eval", "export-traces", b, "--to", exported]);
    expect(ex.code).toBe(0);
    expect(ex.stdout).toMatch(/model_cot\.jsonl: 4 record\(s\)/);
    expect((await readFile(path.join(exported, "model_cot.jsonl"), "utf8")).trim().split("\n")).toHaveLength(4);
    const notStagewise = await medmmv(["eval", "export-traces", tmp(), "--to", exported]);
    expect(notStagewise.code).toBe(2);
    expect(notStagewise.stderr).toMatch(/is not an eval folder/);
  });

  it("kill -9 mid-run, --resume: the resumed process pays only for what the checkpoints on disk lack", async () => {
    const out = path.join(tmp(), "killed");
    const base = stagewiseScenario(items);
    let child: ChildProcess | undefined;
    let seen = 0;
    servers.model.setScenario({
      ...base,
      agents: Object.fromEntries(
        Object.entries(base.agents).map(([name, script]) => [
          name,
          (req: ScriptedRequest) => {
            if (++seen === 20) child?.kill("SIGKILL");
            return (script as (r: ScriptedRequest) => unknown)(req);
          },
        ]),
      ),
    });
    const args = ["eval", "--dataset", "clinhallu", "--input", GOLD, "--images", IMAGES, "--method", "stagewise", "--concurrency", "2", "--out", out];
    const killed = await medmmv(args, (c) => (child = c));
    expect(killed.signal).toBe("SIGKILL");
    await until(() => (servers.model.stats().inFlight === 0 ? true : undefined), 10_000, "the killed run's calls to end");
    const saved = (await readResults(path.join(out, "results.jsonl"))).records.reduce((n, r) => n + paidFor(r), 0);
    expect(saved).toBeGreaterThan(0);
    servers.model.reset();
    servers.model.setScenario(stagewiseScenario(items));
    const resumed = await medmmv([...args, "--resume"]);
    expect(resumed.code).toBe(0);
    expect(servers.model.stats().total).toBe(64 - saved);
    const s = JSON.parse(await readFile(path.join(out, "summary.json"), "utf8")) as EvalSummary;
    expect(s.stagewise).toMatchObject({ acc: 1, hV: 0, hK: 0, hR: 0, records: 4 });
  });

  it("bad stage-wise flags are usage errors that say what to fix", async () => {
    const bad = await medmmv(["eval", "--dataset", "clinhallu", "--input", GOLD, "--method", "stagewise", "--replace", "V,X", "--out", path.join(tmp(), "never")]);
    // Rejected by the flag parser (commander's own exit code), before any model call.
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/expected a list of V, K, VK/);
    const traces = await medmmv(["eval", "--dataset", "clinhallu", "--input", GOLD, "--method", "cot", "--traces", "examples/clinhallu/model_cot.jsonl", "--out", path.join(tmp(), "never2")]);
    expect(traces.code).toBe(2);
    expect(traces.stderr).toMatch(/--traces needs --dataset clinhallu --method stagewise/);
    const sj = await medmmv(["eval", "--dataset", "clinhallu", "--input", GOLD, "--method", "stagewise", "--stage-judge", "--out", path.join(tmp(), "never3")]);
    expect(sj.code).toBe(2);
    expect(sj.stderr).toMatch(/--stage-judge applies to --method medmmv or cot/);
    expect(servers.model.stats().total).toBe(0);
  });
});
