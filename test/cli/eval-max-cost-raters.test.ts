import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { evalScenario } from "../eval/eval-fixtures.js";
import { medmmvCli } from "../support/medmmv-cli.js";

/** `eval --max-cost` names every unpriced model the run would call, raters included, before the first call. */
const servers = useScriptedServers({ scenario: evalScenario({}) });
let tmp: string;
let input: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-cli-maxcost-"));
  input = path.join(tmp, "items.jsonl");
  // Our own synthetic item.
  await writeFile(input, JSON.stringify({ id: "p1", question: "Synthetic question: which option is listed first?", options: ["A. first", "B. second"], answer: "A" }) + "\n");
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const env = (prices: Record<string, unknown>) => ({
  OPENAI_BASE_URL: servers.model.baseUrl,
  OPENAI_API_KEY: "k",
  MEDMMV_MODEL: "scripted",
  MEDMMV_PRICES: JSON.stringify(prices),
  MEDMMV_CACHE: "off",
  MEDMMV_LOG_LEVEL: "silent",
});

describe("medmmv eval --max-cost with --raters (CLI)", () => {
  it("an unpriced rater model stops the run before the first call, and the message names it", async () => {
    const out = path.join(tmp, "unpriced-rater");
    const r = await medmmvCli(["eval", "--dataset", "jsonl", "--input", input, "--method", "cot", "--raters", "scripted,rater-without-price", "--max-cost", "1", "--out", out], env({ scripted: { input: 1, output: 2 } }), "", undefined, { timeoutMs: 60_000 });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-cost needs a price for every model the run calls; none for rater-without-price \(a rater or grader\)/);
    expect(r.stderr).not.toMatch(/none for [^\n]*\bscripted\b/);
    expect(servers.model.stats().total).toBe(0);
    // Refused before the run folder was claimed: no manifest, no results.
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });

  it("with every model priced it runs and rates", async () => {
    const out = path.join(tmp, "priced");
    const r = await medmmvCli(["eval", "--dataset", "jsonl", "--input", input, "--method", "cot", "--raters", "rater-with-price", "--max-cost", "1", "--out", out], env({ scripted: { input: 1, output: 2 }, "rater-with-price": { input: 1, output: 2 } }), "", undefined, { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(servers.model.stats().total).toBeGreaterThan(0);
  });
});
