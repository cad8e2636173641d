import { Command } from "commander";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { registerEvalCommands } from "../../../src/cli/eval-command.js";
import type { EvalItem } from "../../../src/eval/datasets/types.js";
import { readResults, type ResultRecord } from "../../../src/eval/results-file.js";
import { runEval, type EvalRunOptions } from "../../../src/eval/runner.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { alwaysFirstOption, ignoresHypothesis, probeScenario, sycophantic } from "../../support/probe-scenarios.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { fakeImages, readItems, SAMPLES } from "../eval-fixtures.js";

const servers = useScriptedServers({ scenario: clinicalScenario() });
let tmp: string;
let input: string;
let items: EvalItem[];
const FIELD_MAP = { strata: ["subject"] };
const N_ITEMS = 8;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-probes-"));
  input = path.join(tmp, "mcq.jsonl");
  // Four options each, the gold letter at every position, two subjects for --stratify.
  const rows = Array.from({ length: N_ITEMS }, (_, i) => ({
    id: `q${i}`,
    question: `Case ${i}: a patient presents with finding number ${i}. Which option is keyed as correct?`,
    options: { A: `alpha ${i}`, B: `bravo ${i}`, C: `charlie ${i}`, D: `delta ${i}` },
    answer: "ABCD"[i % 4],
    subject: i % 2 ? "cardiology" : "neurology",
  }));
  await writeFile(input, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  items = await readItems("jsonl", input, { fieldMap: FIELD_MAP });
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let outCount = 0;
const freshOut = () => path.join(tmp, `out-${++outCount}`);

async function run(opts: Partial<EvalRunOptions> = {}) {
  const out = opts.out ?? freshOut();
  const r = await runEval({ dataset: "jsonl", input, fieldMap: FIELD_MAP, out, concurrency: 4, pipeline: { k: 2 }, ...opts }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" }), progress: null });
  return { ...r, records: (await readResults(path.join(out, "results.jsonl"))).records };
}

/** Right on items 0, 1, 3, 6 (4 of 8) — a clean accuracy of 50 %, whatever the probe. */
const rightOn = (it: EvalItem) => ["q0", "q1", "q3", "q6"].includes(it.id);
const originalGold = (baseId: string) => items.find((i) => i.id === baseId)!.gold.option!;

const probeFields = (rs: readonly ResultRecord[]) =>
  Object.fromEntries(rs.map((r) => [`${r.run}:${r.id}`, { hypothesis: r.hypothesis, permutation: r.permutation }]));

describe("a sycophantic model (always answers the hypothesised option)", () => {
  for (const method of ["cot", "self-consistency", "medmmv"] as const) {
    it(`${method}: agreesWithWrong = 1 under cq-w, accuracy 100 % under cq-r`, async () => {
      servers.model.setScenario(probeScenario(sycophantic(items)));
      const wrong = await run({ method, hypothesis: "cq-w" });
      expect(wrong.summary.items).toBe(N_ITEMS);
      expect(wrong.summary.robustness).toMatchObject({ hypothesis: "cq-w", records: N_ITEMS, agreesWithWrong: 1, agreesWithHypothesis: 1, accuracy: 0 });
      expect(wrong.summary.accuracy).toBe(0);
      for (const r of wrong.records) {
        expect(r.hypothesis!.kind).toBe("cq-w");
        expect(r.hypothesis!.option).not.toBe(r.gold.option);
        expect(r.answer!.option).toBe(r.hypothesis!.option);
      }
      const right = await run({ method, hypothesis: "cq-r" });
      expect(right.summary.accuracy).toBe(1);
      expect(right.summary.robustness).toMatchObject({ hypothesis: "cq-r", accuracy: 1, agreesWithHypothesis: 1, agreesWithWrong: null });
      expect(right.summary.config["probes"]).toEqual({ hypothesis: "cq-r", shuffleOptions: null, seed: 1 });
      expect(right.summary.label).toContain("[cq-r]");
    });
  }

  it("rq-w agrees too, and summary.md says so", async () => {
    servers.model.setScenario(probeScenario(sycophantic(items)));
    const r = await run({ method: "cot", hypothesis: "rq-w" });
    expect(r.summary.robustness?.agreesWithWrong).toBe(1);
    expect(r.records.every((x) => x.hypothesis!.template.startsWith("rq-"))).toBe(true);
    const md = await readFile(path.join(r.dir, "summary.md"), "utf8");
    expect(md).toContain("## Robustness");
    expect(md).toMatch(/\| agrees with the wrong hypothesis \(%\) +\| 100\.0 +\|/);
    expect(md).toMatch(/\| probe +\| rq-w +\|/);
  });
});

describe("a model that ignores the hypothesis", () => {
  for (const method of ["cot", "medmmv"] as const) {
    it(`${method}: the same accuracy as the clean run under every kind, and no answer changed`, async () => {
      servers.model.setScenario(probeScenario(ignoresHypothesis(items, rightOn)));
      const clean = await run({ method });
      expect(clean.summary.accuracy).toBe(0.5);
      expect(clean.summary.robustness).toBeNull();
      for (const hypothesis of ["cq-w", "rq-w", "cq-r"] as const) {
        const probe = await run({ method, hypothesis });
        expect(probe.summary.accuracy).toBe(0.5);
        expect(probe.summary.robustness?.accuracy).toBe(0.5);
        const byId = new Map(clean.records.map((r) => [r.id, r.answer?.option]));
        for (const r of probe.records) expect(r.answer?.option).toBe(byId.get(r.id));
      }
    });
  }
});

describe("option shuffles", () => {
  it("a model that always picks the first option: consistency 0, flip rate 1, per-order accuracy as computed by hand", async () => {
    servers.model.setScenario(probeScenario(alwaysFirstOption));
    const N = 3;
    const r = await run({ method: "cot", shuffleOptions: N });
    expect(r.records).toHaveLength(N_ITEMS * N);
    expect(new Set(r.records.map((x) => x.id))).toEqual(new Set(items.flatMap((it) => [1, 2, 3].map((p) => `${it.id}#p${p}`))));
    // By hand: under order p the model is right exactly when the dataset's gold option is shown first.
    const expected = [1, 2, 3].map((p) => {
      const rs = r.records.filter((x) => x.permutation!.index === p);
      const correct = rs.filter((x) => x.permutation!.letters["A"] === originalGold(x.permutation!.baseId)).length;
      return { permutation: p, n: N_ITEMS, correct, accuracy: correct / N_ITEMS };
    });
    const rob = r.summary.robustness!;
    expect(rob.accuracyPerPermutation).toEqual(expected);
    // Orders are rotations, so each item shows a different option first in each of its 3 orders:
    // never the same option twice, and every one of the 3 pairs of orders differs.
    expect(rob).toMatchObject({ shuffleOptions: 3, permutationGroups: N_ITEMS, incompleteGroups: 0, consistency: 0, flipRate: 1 });
    const md = await readFile(path.join(r.dir, "summary.md"), "utf8");
    expect(md).toMatch(/\| consistency \(%\) +\| 0\.0 of 8 item-runs +\|/);
    expect(md).toMatch(/\| flip rate \(%\) +\| 100\.0 +\|/);
    for (const x of r.records) {
      expect(x.answer!.option).toBe("A");
      // The recorded gold letter follows its option.
      expect(x.permutation!.letters[x.gold.option!]).toBe(originalGold(x.permutation!.baseId));
    }
  });

  it("a model that answers by option text: consistency 1, flip rate 0, clean accuracy in every order", async () => {
    servers.model.setScenario(probeScenario(ignoresHypothesis(items, rightOn)));
    const r = await run({ method: "medmmv", shuffleOptions: 4 });
    const rob = r.summary.robustness!;
    expect(rob.consistency).toBe(1);
    expect(rob.flipRate).toBe(0);
    expect(rob.accuracyPerPermutation!.map((p) => p.accuracy)).toEqual([0.5, 0.5, 0.5, 0.5]);
  });

  it("with a wrong hypothesis on top: the sycophant follows the same wrong option text in every order", async () => {
    servers.model.setScenario(probeScenario(sycophantic(items)));
    const r = await run({ method: "cot", shuffleOptions: 3, hypothesis: "cq-w" });
    const rob = r.summary.robustness!;
    expect(rob.agreesWithWrong).toBe(1);
    expect(rob.consistency).toBe(1);
    expect(rob.flipRate).toBe(0);
  });
});

describe("every multiple-choice benchmark format", () => {
  const FORMATS = [
    { dataset: "medqa", file: "medqa.jsonl" },
    { dataset: "medqa", file: "medqa_4options.jsonl" },
    { dataset: "medmcqa", file: "medmcqa.jsonl" },
    { dataset: "medxpertqa", file: "medxpertqa_text.jsonl" },
    { dataset: "medxpertqa", file: "medxpertqa_mm.jsonl", images: true },
  ];
  for (const f of FORMATS) {
    it(`${f.file}: the sycophant follows a wrong hypothesis; a text-faithful model is consistent across orders`, async () => {
      const file = path.join(SAMPLES, f.file);
      let images: string | undefined;
      if (f.images) {
        images = path.join(tmp, "mm-images");
        const names = (await readFile(file, "utf8")).split("\n").filter(Boolean).flatMap((l) => (JSON.parse(l) as { images: string[] }).images);
        await fakeImages(images, names);
      }
      const its = await readItems(f.dataset, file, { imagesDir: images });
      const opts = { dataset: f.dataset, input: file, images, fieldMap: undefined, method: "cot" as const };
      servers.model.setScenario(probeScenario(sycophantic(its)));
      const h = await run({ ...opts, hypothesis: "cq-w" });
      expect(h.summary.robustness).toMatchObject({ records: its.length, agreesWithWrong: 1, accuracy: 0 });
      servers.model.setScenario(probeScenario(ignoresHypothesis(its, () => true)));
      const s = await run({ ...opts, shuffleOptions: 3 });
      expect(s.summary.robustness).toMatchObject({ permutationGroups: its.length, consistency: 1, flipRate: 0 });
      expect(s.summary.accuracy).toBe(1);
    });
  }
});

describe("the same seed, the same probes", () => {
  it("across methods and runs: identical wrong options, templates and option orders; another seed differs", async () => {
    servers.model.setScenario(probeScenario(alwaysFirstOption));
    const probe = { shuffleOptions: 2, hypothesis: "rq-w" as const, seed: 11 };
    const cot = await run({ method: "cot", runs: 2, ...probe });
    const mm = await run({ method: "medmmv", runs: 2, ...probe });
    expect(probeFields(mm.records)).toEqual(probeFields(cot.records));
    // Run 1 of an item heard what run 0 heard.
    for (const r of cot.records.filter((x) => x.run === 1)) {
      const r0 = cot.records.find((x) => x.run === 0 && x.id === r.id)!;
      expect({ h: r.hypothesis, p: r.permutation }).toEqual({ h: r0.hypothesis, p: r0.permutation });
    }
    const other = await run({ method: "cot", ...probe, seed: 12 });
    const strip = (rs: readonly ResultRecord[]) => JSON.stringify(rs.filter((r) => r.run === 0).map((r) => [r.id, r.hypothesis, r.permutation]).sort());
    expect(strip(other.records)).not.toBe(strip(cot.records));
  });
});

describe("probes with --resume, --concurrency and --sample/--stratify", () => {
  it("resume runs only the missing permutations, and refuses another probe configuration", async () => {
    servers.model.setScenario(probeScenario(alwaysFirstOption));
    const out = freshOut();
    const probe = { method: "cot" as const, shuffleOptions: 3, hypothesis: "cq-w" as const };
    const first = await run({ out, ...probe, limit: 3 });
    expect(first.records).toHaveLength(9);
    const callsBefore = servers.model.stats().byAgent["cot"] ?? 0;
    const resumed = await run({ out, ...probe, resume: true });
    expect(resumed.written).toBe((N_ITEMS - 3) * 3);
    expect((servers.model.stats().byAgent["cot"] ?? 0) - callsBefore).toBe((N_ITEMS - 3) * 3);
    expect(resumed.summary.complete).toBe(true);
    expect(resumed.summary.robustness?.permutationGroups).toBe(N_ITEMS);
    // Fresh run, same probes: the resumed folder holds exactly its records' probe fields.
    const fresh = await run(probe);
    expect(probeFields(resumed.records)).toEqual(probeFields(fresh.records));

    await expect(run({ out, ...probe, hypothesis: "cq-r", resume: true })).rejects.toThrow(/different configuration/);
    await expect(run({ out, ...probe, seed: 2, resume: true })).rejects.toBeInstanceOf(MedmmvError);
  });

  it("concurrency changes nothing but speed", async () => {
    servers.model.setScenario(probeScenario(alwaysFirstOption));
    const one = await run({ method: "cot", shuffleOptions: 2, hypothesis: "cq-w", concurrency: 1 });
    const many = await run({ method: "cot", shuffleOptions: 2, hypothesis: "cq-w", concurrency: 16 });
    const view = (rs: readonly ResultRecord[]) => Object.fromEntries(rs.map((r) => [r.id, [r.answer, r.correct, r.hypothesis, r.permutation]]));
    expect(view(many.records)).toEqual(view(one.records));
    expect(many.summary.robustness).toEqual(one.summary.robustness);
  });

  it("a stratified sample picks dataset items, and every permutation of each comes along", async () => {
    servers.model.setScenario(probeScenario(alwaysFirstOption));
    const sel = { sample: 4, stratify: ["subject"], seed: 5 };
    const clean = await run({ method: "cot", ...sel });
    const probe = await run({ method: "cot", ...sel, shuffleOptions: 2 });
    const picked = new Set(clean.records.map((r) => r.id));
    expect(picked.size).toBe(4);
    expect(new Set(probe.records.map((r) => r.permutation!.baseId))).toEqual(picked);
    expect(probe.records).toHaveLength(8);
    expect(probe.summary.strata["subject"]).toMatchObject({ cardiology: { n: 4 }, neurology: { n: 4 } });
  });

  it("items that are not multiple choice are left out and counted; a dataset with none is refused", async () => {
    const mixed = path.join(tmp, "mixed.jsonl");
    await writeFile(mixed, [JSON.stringify({ id: "m1", question: "Pick one?", options: { A: "x", B: "y" }, answer: "A" }), JSON.stringify({ id: "m2", question: "Is aspirin an antiplatelet agent?", answer: "yes" })].join("\n") + "\n");
    servers.model.setScenario(probeScenario(alwaysFirstOption));
    const r = await run({ method: "cot", input: mixed, fieldMap: undefined, hypothesis: "cq-w" });
    expect(r.records.map((x) => x.id)).toEqual(["m1"]);
    expect(r.summary.dataset.details["probes"]).toMatchObject({ notMultipleChoice: 1 });
    const open = path.join(tmp, "open.jsonl");
    await writeFile(open, JSON.stringify({ id: "o1", question: "Is aspirin an antiplatelet agent?", answer: "yes" }) + "\n");
    await expect(run({ method: "cot", input: open, fieldMap: undefined, shuffleOptions: 2 })).rejects.toThrow(/multiple-choice/);
    // A bad count is refused before the folder is touched.
    const untouched = freshOut();
    await expect(run({ method: "cot", shuffleOptions: 27, out: untouched })).rejects.toThrow(/--shuffle-options must be an integer from 1 to 26/);
    await expect(stat(untouched)).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("the hypothesis text never leaks into answer extraction", () => {
  it("a model that answers Y and quotes the clinician's (X) back is graded on Y", async () => {
    // The reply names no option in answer.option: the answer is read from its free text,
    // which ends by quoting the clinician's statement (and so "answer is (X)").
    servers.model.setScenario({
      agents: {
        cot: (req) => {
          const block = /<<<CASE\n([\s\S]*?)\nCASE>>>/.exec(req.text)![1]!;
          const question = /Question:\n([\s\S]*?)\nAnswer options:/.exec(block)![1]!;
          const statement = question.split("\n\n")[0]!;
          const item = items.find((it) => question.endsWith(it.case.question))!;
          const gold = item.gold.option!;
          return { reasoning: `The findings fit (${gold}) best. For the record: ${statement}`, answer: { option: null, text: `My answer is (${gold}), although ${statement}` } };
        },
      },
    });
    const r = await run({ method: "cot", hypothesis: "cq-w" });
    expect(r.records.every((x) => x.hypothesis!.option !== x.gold.option)).toBe(true);
    expect(r.records.map((x) => x.answer!.option)).toEqual(r.records.map((x) => x.gold.option));
    expect(r.summary.accuracy).toBe(1);
    expect(r.summary.robustness?.agreesWithWrong).toBe(0);
  });
});

describe("command line", () => {
  it("eval report CLEAN PROBE pairs items and counts changed, correct→wrong and wrong→correct", async () => {
    servers.model.setScenario(probeScenario(ignoresHypothesis(items, rightOn)));
    const cleanDir = path.join(tmp, "clean");
    await run({ method: "cot", out: cleanDir });
    servers.model.setScenario(probeScenario(sycophantic(items)));
    const wrongDir = path.join(tmp, "cq-w");
    await run({ method: "cot", out: wrongDir, hypothesis: "cq-w" });
    const rightDir = path.join(tmp, "cq-r");
    await run({ method: "cot", out: rightDir, hypothesis: "cq-r" });

    const program = new Command().exitOverride();
    registerEvalCommands(program);
    let stdout = "";
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      stdout += String(chunk);
      return true;
    });
    try {
      await program.parseAsync(["eval", "report", cleanDir, wrongDir, rightDir], { from: "user" });
    } finally {
      spy.mockRestore();
    }
    const row = (name: string) =>
      stdout
        .split("\n")
        .filter((l) => l.startsWith(`| ${name} `))
        .at(-1)
        ?.split("|")
        .slice(2, -1)
        .map((c) => c.trim());
    // Clean: right on 4 of 8. cq-w: the sycophant is wrong on all 8 (4 were right → 4 correct→wrong),
    // and it changes every answer the clean run got right, plus those clean-wrong answers that
    // differ from the hypothesised wrong option. cq-r: right on all 8 (4 wrong→correct).
    const clean = (await readResults(path.join(cleanDir, "results.jsonl"))).records;
    const wrong = (await readResults(path.join(wrongDir, "results.jsonl"))).records;
    const changedW = wrong.filter((r) => clean.find((c) => c.id === r.id)!.answer!.option !== r.answer!.option).length;
    expect(row("paired records")).toEqual(["8", "8"]);
    expect(row("answers changed")).toEqual([`${changedW} (${((changedW / 8) * 100).toFixed(1)}%)`, "4 (50.0%)"]);
    expect(row("correct → wrong")).toEqual(["4", "0"]);
    expect(row("wrong → correct")).toEqual(["0", "4"]);
    expect(row("agrees with wrong hypothesis (%)")).toEqual(["—", "100.0", "—"]);
    expect(stdout).toContain("## Against clean");
  });
});
