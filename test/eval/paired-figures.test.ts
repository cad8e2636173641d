import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { runConversationEval } from "../../src/eval/conversation/run-conversation-eval.js";
import { loadRecords, pairedFigures, pairedFiguresMarkdown, type PairedTable } from "../../src/eval/paired-figures.js";
import { runEval } from "../../src/eval/runner.js";
import type { EvalSummary } from "../../src/eval/summary.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { stagewiseScenario } from "../support/stagewise-scenario.js";
import { medmmvCli } from "../support/medmmv-cli.js";
import { conversationScenario } from "./conversation/conversation-scenario.js";
import { useTempDir } from "./datasets/dataset-kit.js";
import { fakeImages, resultRecord } from "./eval-fixtures.js";
import { GOLD, IMAGES, useClinhalluItems } from "./stagewise/clinhallu-fixture.js";

/** `eval report A B`: every study figure compared on the items both runs share. */
const servers = useScriptedServers();
const tmp = useTempDir("medmmv-paired-figures-");
const clinhallu = useClinhalluItems();
const DRLLAVA = fileURLToPath(new URL("./conversation/fixtures/drllava-synthetic.json", import.meta.url));

const figure = (t: PairedTable, name: string) => t.figures.find((f) => f.name === name)!;

describe("paired comparison of ClinHallu's figures (two stage-wise runs)", () => {
  let tables: PairedTable[];
  let summaries: EvalSummary[];
  beforeAll(async () => {
    const dirs: string[] = [];
    summaries = [];
    for (const [name, visualWrongFor] of [["clean", [] as string[]], ["visual-wrong", ["original_index:0", "original_index:1"]]] as const) {
      servers.model.setScenario(stagewiseScenario(clinhallu(), { stageJudge: (it, stage, c, ref) => (stage === "visual" && (visualWrongFor as readonly string[]).includes(it.id) ? 1 : c.trim() === ref.trim() ? 0 : 1) }));
      const out = path.join(tmp(), name);
      const r = await runEval({ dataset: "clinhallu", input: GOLD, images: IMAGES, method: "stagewise", out, concurrency: 2 }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" }), progress: null });
      dirs.push(out);
      summaries.push(r.summary);
    }
    tables = pairedFigures(["clean", "visual-wrong"], await Promise.all(dirs.map(loadRecords)));
  });

  it("gives H_V, H_K, H_R and every ΔAcc, each the study's own figure, with a paired interval", () => {
    expect(tables.map((t) => t.table)).toEqual(["ClinHallu"]);
    const t = tables[0]!;
    expect(t.items).toBe(4);
    expect(t.figures.map((f) => f.name)).toEqual(["H_V", "H_K", "H_R", "ΔAcc Rep-V", "ΔAcc Rep-K", "ΔAcc Rep-VK"]);
    for (const [name, key] of [["H_V", "hV"], ["H_K", "hK"], ["H_R", "hR"]] as const) {
      expect(figure(t, name).a).toBe(summaries[0]!.stagewise![key]);
      expect(figure(t, name).b).toBe(summaries[1]!.stagewise![key]);
    }
    for (const f of t.figures) expect(f.difference?.ci, f.name).not.toBeNull();
  });

  it("H_V: two items hallucinate their visual stage in the second run only — difference −50 pp, McNemar 0 / 2, p = 0.5; Holm over the table", () => {
    const hv = figure(tables[0]!, "H_V");
    expect(hv).toMatchObject({ a: 0, b: 0.5, mcnemar: { b: 0, c: 2, concordant: 2 }, pFrom: "McNemar" });
    expect(hv.difference!.value).toBeCloseTo(-0.5, 12);
    expect(hv.p).toBeCloseTo(0.5, 12);
    expect(hv.difference!.ci!.hi).toBeLessThanOrEqual(0);
    // The figures that did not move: a zero difference, an interval of zero, p = 1.
    const dv = figure(tables[0]!, "ΔAcc Rep-V");
    expect(dv).toMatchObject({ a: 0, b: 0, bootstrapP: 1, mcnemar: null, pFrom: "bootstrap" });
    expect(dv.difference!.ci).toMatchObject({ lo: 0, hi: 0, method: "paired-bootstrap" });
    // Holm over the table's six p values: the smallest (0.5) × 6, capped at 1.
    expect(hv.pHolm).toBe(1);
    expect(pairedFiguresMarkdown(tables)).toMatch(/### clean − visual-wrong: ClinHallu \(4 shared items\)[\s\S]*\| H_V\s+\|\s+0\.0 \|\s+50\.0 \|\s+-50\.0 \| \[-\d+\.\d–0\.0\] \|\s+0 \/ 2 \|\s+0\.5000 \(McNemar\) \|\s+1\.0000 \|/);
  });
});

describe("paired comparison of Dr-LLaVA's figures (two conversation runs)", () => {
  let dirs: string[];
  let tables: PairedTable[];
  let summaries: EvalSummary[];
  beforeAll(async () => {
    const images = path.join(tmp(), "images");
    await fakeImages(images, ["test1.jpeg", "test2.jpeg", "test3.jpeg"]);
    dirs = [];
    summaries = [];
    // The second run diagnoses the AML record as myeloma: one conversation per order wrong, and off its path.
    for (const [name, override] of [["gold", () => undefined], ["mm-for-aml", (image: string, step: string) => (image === "test1.jpeg" && step === "diagnosis" ? "Multiple myeloma." : undefined)]] as const) {
      servers.model.setScenario(conversationScenario(override));
      const out = path.join(tmp(), name);
      const r = await runConversationEval({ dataset: "drllava", input: DRLLAVA, images, method: "cot", orders: ["si", "df"], out, seed: 3 }, { config: servers.config() });
      dirs.push(out);
      summaries.push(r.summary);
    }
    tables = pairedFigures(["gold", "mm-for-aml"], await Promise.all(dirs.map(loadRecords)));
  });

  it("one table per order, each with A_Q, A_C, A_D and both H_cc as the runs' own summaries give them, with intervals", () => {
    expect(tables.map((t) => t.table)).toEqual(["Dr-LLaVA conversations, si", "Dr-LLaVA conversations, df"]);
    for (const [k, order] of (["si", "df"] as const).entries()) {
      const t = tables[k]!;
      expect(t.items).toBe(3);
      for (const [name, key] of [["A_Q", "aQ"], ["A_C", "aC"], ["A_D", "aD"], ["H_cc reference", "hCCReference"], ["H_cc labelled-only", "hCC"]] as const) {
        expect(figure(t, name).a, `${order} ${name}`).toBe(summaries[0]!.conversation![order]![key]);
        expect(figure(t, name).b, `${order} ${name}`).toBe(summaries[1]!.conversation![order]![key]);
        expect(figure(t, name).difference?.ci, `${order} ${name}`).not.toBeNull();
      }
      // A_C and A_D: the AML conversation is right in the first run only (McNemar 1 / 0, p = 1); A_Q is a share of turns, tested by the bootstrap.
      expect(figure(t, "A_C")).toMatchObject({ a: 1, mcnemar: { b: 1, c: 0 }, p: 1, pFrom: "McNemar" });
      expect(figure(t, "A_D").difference!.value).toBeCloseTo(1 / 3, 12);
      expect(figure(t, "A_Q")).toMatchObject({ mcnemar: null, pFrom: "bootstrap" });
      expect(figure(t, "A_Q").difference!.value).toBeCloseTo(1 / 15, 12);
    }
  });

  it("`medmmv eval report A B` prints them", async () => {
    const r = await medmmvCli(["eval", "report", ...dirs], { MEDMMV_LOG_LEVEL: "silent" }, "", undefined, { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("## Paired comparison of the studies' figures");
    for (const order of ["si", "df"]) {
      const section = r.stdout.split(`### gold − mm-for-aml: Dr-LLaVA conversations, ${order} (3 shared items)`)[1]!.split("###")[0]!;
      for (const name of ["A_Q", "A_C", "A_D", "H_cc reference", "H_cc labelled-only"]) expect(section, `${order} ${name}`).toMatch(new RegExp(`\\| ${name}\\s+\\|[^\\n]*\\[-?\\d+\\.\\d–-?\\d+\\.\\d\\]`));
    }
  });
});

describe("paired comparison of the robustness rates (records built by hand)", () => {
  // Three items shown in two option orders; the dataset's answer is A, shown as A then as B.
  const rec = (item: string, p: 1 | 2, chosen: "A" | "B") => {
    const letters = p === 1 ? { A: "A", B: "B" } : { A: "B", B: "A" };
    const shown = Object.entries(letters).find(([, v]) => v === chosen)![0];
    return resultRecord(`${item}#p${p}`, 0, "completed", { answer: { option: shown, text: chosen }, correct: chosen === "A", permutation: { index: p, of: 2, baseId: item, letters } });
  };
  const steady = ["i1", "i2", "i3"].flatMap((i) => [rec(i, 1, "A"), rec(i, 2, "A")]);
  // The second run changes its mind on i1 when the options are swapped.
  const flipping = [rec("i1", 1, "A"), rec("i1", 2, "B"), ...["i2", "i3"].flatMap((i) => [rec(i, 1, "A"), rec(i, 2, "A")])];

  it("consistency is a share of items (McNemar), the flip rate and accuracy are tested by the bootstrap", () => {
    const [t] = pairedFigures(["steady", "flipping"], [steady, flipping]);
    expect(t!.table).toBe("Robustness probes");
    expect(t!.items).toBe(3);
    expect(t!.figures.map((f) => f.name)).toEqual(["accuracy under the probe", "consistency", "flip rate"]);
    expect(figure(t!, "consistency")).toMatchObject({ a: 1, mcnemar: { b: 1, c: 0, concordant: 2 }, pFrom: "McNemar" });
    expect(figure(t!, "consistency").b).toBeCloseTo(2 / 3, 12);
    expect(figure(t!, "flip rate").difference!.value).toBeCloseTo(-1 / 3, 12);
    expect(figure(t!, "flip rate")).toMatchObject({ mcnemar: null, pFrom: "bootstrap" });
    expect(figure(t!, "accuracy under the probe").difference!.value).toBeCloseTo(1 / 6, 12);
    for (const f of t!.figures) expect(f.difference!.ci, f.name).not.toBeNull();
  });

  it("a table only one run has is not compared", () => {
    const plain = ["i1", "i2", "i3"].map((i) => resultRecord(`${i}#p1`, 0));
    expect(pairedFigures(["probed", "plain"], [steady, plain])).toEqual([]);
  });
});
