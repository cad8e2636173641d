import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { registerEvalCommands, toRunOptions, type EvalCliOptions } from "../../src/cli/eval-command.js";
import type { EvalRunOptions } from "../../src/eval/runner.js";

/** Parse a command line with the real option definitions, capturing what the runner would get. */
async function parse(args: string[]): Promise<EvalRunOptions> {
  const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  registerEvalCommands(program);
  let captured: EvalRunOptions | null = null;
  program.commands
    .find((c) => c.name() === "eval")!
    .action((o: EvalCliOptions) => {
      captured = toRunOptions({ ...o, dataset: o.dataset!, input: o.input!, out: o.out! });
    });
  await program.parseAsync(["eval", ...args], { from: "user" });
  return captured!;
}

describe("medmmv eval flags", () => {
  it("defaults: medmmv, one run, concurrency left to the runner (MEDMMV_MAX_CONCURRENCY), cop base auto, no ablations", async () => {
    const o = await parse(["--dataset", "medqa", "--input", "in.jsonl", "--out", "out"]);
    expect(o).toMatchObject({ dataset: "medqa", input: "in.jsonl", out: "out", method: "medmmv", runs: 1, copBase: "auto" });
    expect(o.concurrency).toBeUndefined();
    expect(o.pipeline).toEqual({ k: undefined, maxRepairs: undefined, adaptive: undefined, dedupe: true, select: undefined, ablations: { noExpansion: false, noHd: false, noTextDoctor: false, noImageDoctor: false, noWebSearch: false } });
  });

  it("every ablation, selection rule, sampling and rater flag reaches the runner", async () => {
    const o = await parse([
      "--dataset", "medxpertqa", "--input", "test.jsonl", "--images", "imgs", "--missing-images", "text-only", "--out", "o",
      "--sample", "200", "--stratify", "body_system,question_type", "--seed", "7", "--limit", "50", "--runs", "3",
      "--method", "medmmv", "--k", "3", "--max-repairs", "2", "--adaptive", "--select", "random",
      "--no-expansion", "--no-hd", "--no-text-doctor", "--no-image-doctor", "--no-web-search",
      "--concurrency", "8", "--resume", "--raters", "gpt-4o, claude", "--cop-base", "1", "--no-dedupe",
    ]);
    expect(o).toMatchObject({ images: "imgs", missingImages: "text-only", sample: 200, stratify: ["body_system", "question_type"], seed: 7, limit: 50, runs: 3, concurrency: 8, resume: true, raters: ["gpt-4o", "claude"], copBase: 1 });
    expect(o.pipeline).toEqual({ k: 3, maxRepairs: 2, adaptive: true, dedupe: false, select: "random", ablations: { noExpansion: true, noHd: true, noTextDoctor: true, noImageDoctor: true, noWebSearch: true } });
  });

  it("robustness probes: --hypothesis and --shuffle-options reach the runner; bad values are refused", async () => {
    expect(await parse(["--dataset", "medqa", "--input", "x", "--out", "o", "--hypothesis", "rq-w", "--shuffle-options", "5"])).toMatchObject({ hypothesis: "rq-w", shuffleOptions: 5 });
    await expect(parse(["--dataset", "medqa", "--input", "x", "--out", "o", "--hypothesis", "cq"])).rejects.toThrow(/Allowed choices/);
    await expect(parse(["--dataset", "medqa", "--input", "x", "--out", "o", "--shuffle-options", "0"])).rejects.toThrow(/integer/);
  });

  it("a generic JSONL field map is parsed as JSON", async () => {
    const o = await parse(["--dataset", "jsonl", "--input", "x", "--out", "o", "--field-map", '{"question":"q","answer":"a","strata":["subject"]}']);
    expect(o.fieldMap).toEqual({ question: "q", answer: "a", strata: ["subject"] });
  });

  it("rejects unknown methods, datasets and bad numbers", async () => {
    await expect(parse(["--dataset", "medqa", "--input", "x", "--out", "o", "--method", "tot"])).rejects.toThrow(/Allowed choices/);
    await expect(parse(["--dataset", "mmlu", "--input", "x", "--out", "o"])).rejects.toThrow(/Allowed choices/);
    await expect(parse(["--dataset", "medqa", "--input", "x", "--out", "o", "--runs", "0"])).rejects.toThrow(/integer/);
    await expect(parse(["--dataset", "jsonl", "--input", "x", "--out", "o", "--field-map", "{nope"])).rejects.toThrow(/JSON/);
    await expect(parse(["--dataset", "medqa", "--input", "x", "--out", "o", "--cache", "sometimes"])).rejects.toThrow(/Allowed choices/);
  });
});
