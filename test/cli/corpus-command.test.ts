import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig, type Config } from "../../src/core/config.js";
import { corpusIndexCommand, corpusNameFromFile, corpusSearchCommand, corpusStatsCommand, type CorpusCommandEnv } from "../../src/cli/corpus-command.js";
import { PG_TEST_URL, usePgSchemas } from "../support/pg-schemas.js";
import { medmmvCli } from "../support/medmmv-cli.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const EXAMPLE = path.join(ROOT, "examples/corpus/cardiology.jsonl");
const pgSchemas = usePgSchemas();

const roots: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), "medmmv-cli-corpus-"));
  roots.push(d);
  return d;
};
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** The three commands with their output captured, on one store. */
function harness(config: Config, pgSchema?: string) {
  let out = "";
  let err = "";
  const env: CorpusCommandEnv = { config, pgSchema, io: { out: (t) => void (out += t), err: (t) => void (err += t) } };
  const take = () => {
    const r = { out, err };
    out = "";
    err = "";
    return r;
  };
  return { env, take };
}

const backends: Array<[string, () => { config: Config; pgSchema?: string }]> = [
  ["embedded SQLite store", () => ({ config: loadConfig({ MEDMMV_DATA_DIR: tempDir() }) })],
  [
    "Postgres (DATABASE_URL)",
    () => {
      const schema = pgSchemas.newSchema();
      return { config: loadConfig({ DATABASE_URL: PG_TEST_URL }), pgSchema: schema };
    },
  ],
];

describe.each(backends)("medmmv corpus on the %s", (_label, make) => {
  it("index → stats → search, re-indexing idempotent, the example corpus found by the demo case's facts", async () => {
    const { config, pgSchema } = make();
    const { env, take } = harness(config, pgSchema);
    expect(await corpusIndexCommand(EXAMPLE, {}, env)).toBe(0);
    const first = take();
    expect(first.err).toBe("");
    expect(first.out).toMatch(/^corpus cardiology: 34 record\(s\) read, 34 added, 0 updated, 0 unchanged, 0 rejected; 34 chunk\(s\)/);

    expect(await corpusIndexCommand(EXAMPLE, {}, env)).toBe(0);
    expect(take().out).toMatch(/34 record\(s\) read, 0 added, 0 updated, 34 unchanged/);

    expect(await corpusStatsCommand({ json: true }, env)).toBe(0);
    const stats = JSON.parse(take().out) as { store: string; corpora: Array<{ corpus: string; documents: number; chunks: number }> };
    expect(stats.store).toBe(config.store.databaseUrl ? "postgres" : "sqlite");
    expect(stats.corpora.map((c) => [c.corpus, c.documents, c.chunks])).toEqual([["cardiology", 34, 34]]);
    expect(await corpusStatsCommand({}, env)).toBe(0);
    expect(take().out).toMatch(/cardiology: 34 document\(s\), 34 chunk\(s\)/);

    expect(await corpusSearchCommand("ST elevation in leads II, III and aVF", { json: true, limit: 3 }, env)).toBe(0);
    const hits = JSON.parse(take().out) as Array<{ id: string; url: string; corpus: string; score: number }>;
    expect(hits).toHaveLength(3);
    expect(hits[0]).toMatchObject({ id: "inferior-leads", corpus: "cardiology", url: "corpus://cardiology/inferior-leads" });

    expect(await corpusSearchCommand("pericardial friction rub", { limit: 2 }, env)).toBe(0);
    const text = take().out;
    expect(text).toMatch(/^1\. Clinical picture of acute pericarditis \(medmmv example corpus/);
    expect(text).toMatch(/corpus:\/\/cardiology\/pericarditis-clinical/);

    expect(await corpusSearchCommand('NEAR("troponin* -AND: ^OR', { json: true }, env)).toBe(0);
    expect((JSON.parse(take().out) as Array<{ id: string }>).length).toBeGreaterThan(0);
    expect(await corpusSearchCommand("zzzz", {}, env)).toBe(0);
    expect(take().out).toBe("no matching passages\n");
  }, 60_000);

  it("reports bad lines with their numbers, indexes the rest, and exits 1", async () => {
    const { config, pgSchema } = make();
    const { env, take } = harness(config, pgSchema);
    const file = path.join(tempDir(), "Mixed Corpus.jsonl");
    writeFileSync(file, [JSON.stringify({ id: "a", title: "Troponin", text: "A cardiac marker." }), "nope", JSON.stringify({ id: "b", title: "" , text: "x" })].join("\n"));
    expect(await corpusIndexCommand(file, {}, env)).toBe(1);
    const r = take();
    expect(r.err).toContain(`${file}:2: not valid JSON`);
    expect(r.err).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3: title`));
    expect(r.out).toMatch(/^corpus mixed-corpus: 3 record\(s\) read, 1 added, 0 updated, 0 unchanged, 2 rejected/);
  }, 60_000);

  it("a missing file or a bad name is a usage error (exit 2) that says what is wrong", async () => {
    const { config, pgSchema } = make();
    const { env, take } = harness(config, pgSchema);
    expect(await corpusIndexCommand("/nonexistent/x.jsonl", {}, env)).toBe(2);
    expect(take().err).toMatch(/\[NOT_FOUND\] cannot read corpus file/);
    expect(await corpusIndexCommand(EXAMPLE, { name: "No Spaces!" }, env)).toBe(2);
    expect(take().err).toMatch(/\[INVALID_INPUT\] corpus name/);
  }, 60_000);
});

describe("medmmv corpus as a user runs it", () => {
  it("is registered on the command line: index then search in a child process", async () => {
    const dataDir = tempDir();
    const run = (args: string[]) => medmmvCli(["corpus", ...args], { MEDMMV_DATA_DIR: dataDir });
    const indexed = await run(["index", EXAMPLE, "--name", "cardio"]);
    expect(indexed.code, indexed.stderr).toBe(0);
    expect(indexed.stdout).toMatch(/corpus cardio: 34 record/);
    const found = await run(["search", "tearing pain radiating to the back", "--json", "--limit", "1"]);
    expect(found.code, found.stderr).toBe(0);
    expect(JSON.parse(found.stdout)).toEqual([expect.objectContaining({ id: "aortic-dissection-features", url: "corpus://cardio/aortic-dissection-features" })]);
  }, 90_000);
});

describe("corpusNameFromFile", () => {
  it("derives a valid corpus name from a file name", () => {
    expect(corpusNameFromFile("/x/Cardiology v2.jsonl")).toBe("cardiology-v2");
    expect(corpusNameFromFile("__.jsonl")).toBe("corpus");
  });
});
