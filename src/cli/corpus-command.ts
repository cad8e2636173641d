import path from "node:path";
import { Command } from "commander";
import type { Config } from "../core/config.js";
import type { CorpusIndex } from "../core/search/local/corpus-index.js";
import { isMedmmvError } from "../core/contracts/errors.js";
import { EXIT, exitCodeFor, intArg } from "./cli-args.js";

// The index (better-sqlite3 or pg) is imported when a corpus command runs, so `--help`
// and the other commands start fast.

export interface CorpusIo {
  out(text: string): void;
  err(text: string): void;
}

export interface CorpusCommandEnv {
  config?: Config;
  io?: CorpusIo;
  /** Postgres schema of the index (tests isolate themselves); default "public", the store's. */
  pgSchema?: string;
}

const processIo: CorpusIo = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

/** A corpus name from a file name: "Cardiology v2.jsonl" → "cardiology-v2". */
export function corpusNameFromFile(file: string): string {
  const base = path
    .basename(file)
    .replace(/\.jsonl?$/i, "")
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, 63);
  return base || "corpus";
}

async function withIndex<T>(env: CorpusCommandEnv, what: string, run: (index: CorpusIndex, config: Config, io: CorpusIo) => Promise<T>): Promise<T | number> {
  const io = env.io ?? processIo;
  try {
    const config = env.config ?? (await import("../core/config.js")).loadConfig();
    const { openCorpusIndex } = await import("../core/search/local/open-corpus-index.js");
    const index = await openCorpusIndex(config.store, { pgSchema: env.pgSchema });
    try {
      return await run(index, config, io);
    } finally {
      await index.close();
    }
  } catch (err) {
    io.err(`medmmv corpus ${what}: ${isMedmmvError(err) ? `[${err.code}] ${err.message}` : err instanceof Error ? err.message : String(err)}\n`);
    return exitCodeFor(err);
  }
}

function where(config: Config): string {
  return config.store.databaseUrl ? "Postgres (DATABASE_URL)" : `SQLite ${path.join(config.store.dataDir, "medmmv.sqlite")}`;
}

/** `medmmv corpus index FILE.jsonl [--name NAME]`: exit 0, or 1 when some lines were rejected (the rest is indexed). */
export async function corpusIndexCommand(file: string, opts: { name?: string }, env: CorpusCommandEnv = {}): Promise<number> {
  return withIndex(env, "index", async (index, config, io) => {
    const { indexCorpusFile } = await import("../core/search/local/index-corpus-file.js");
    const r = await indexCorpusFile(index, file, opts.name ?? corpusNameFromFile(file));
    for (const e of r.errors) io.err(`${file}:${e.line}: ${e.message}\n`);
    io.out(
      `corpus ${r.corpus}: ${r.records} record(s) read, ${r.added} added, ${r.updated} updated, ${r.unchanged} unchanged, ${r.errors.length} rejected; ` +
        `${r.chunks} chunk(s) in ${where(config)}\n`,
    );
    return r.errors.length ? EXIT.failed : EXIT.ok;
  });
}

/** `medmmv corpus search "QUERY" [--json] [--limit N] [--name NAME]`. */
export async function corpusSearchCommand(query: string, opts: { json?: boolean; limit?: number; name?: string }, env: CorpusCommandEnv = {}): Promise<number> {
  return withIndex(env, "search", async (index, _config, io) => {
    const { hitUrl } = await import("../core/search/local/corpus-record.js");
    const hits = (await index.search(query, { limit: opts.limit ?? 5, corpus: opts.name })).map((h) => ({
      corpus: h.corpus,
      id: h.docId,
      chunk: h.chunk,
      title: h.title,
      source: h.source,
      url: hitUrl(h.corpus, h.docId, h.url),
      score: h.score,
      text: h.text,
    }));
    if (opts.json) io.out(`${JSON.stringify(hits, null, 2)}\n`);
    else if (hits.length === 0) io.out("no matching passages\n");
    else
      io.out(
        hits
          .map((h, i) => `${i + 1}. ${h.title}${h.source ? ` (${h.source})` : ""}  [score ${h.score.toFixed(3)}]\n   ${h.url}\n   ${h.text.length > 240 ? `${h.text.slice(0, 237)}...` : h.text}`)
          .join("\n") + "\n",
      );
    return EXIT.ok;
  });
}

/** `medmmv corpus stats [--json]`. */
export async function corpusStatsCommand(opts: { json?: boolean }, env: CorpusCommandEnv = {}): Promise<number> {
  return withIndex(env, "stats", async (index, config, io) => {
    const stats = await index.stats();
    if (opts.json) io.out(`${JSON.stringify({ store: index.backend, corpora: stats }, null, 2)}\n`);
    else if (stats.length === 0) io.out(`no corpus indexed in ${where(config)} (medmmv corpus index FILE.jsonl)\n`);
    else io.out([`corpora in ${where(config)}:`, ...stats.map((s) => `  ${s.corpus}: ${s.documents} document(s), ${s.chunks} chunk(s), last indexed ${s.lastIndexedAt ?? "never"}`)].join("\n") + "\n");
    return EXIT.ok;
  });
}

export function registerCorpusCommands(program: Command): void {
  const corpus = program.command("corpus").description("the offline literature corpus searched with MEDMMV_SEARCH=local (in the store: SQLite, or Postgres with DATABASE_URL)");
  corpus
    .command("index")
    .description("index a JSONL file of {id, title, text, url?, source?} records (re-indexing is idempotent; bad lines are reported and skipped)")
    .argument("<file>", "the JSONL corpus file")
    .option("--name <name>", "corpus name (default: from the file name)")
    .action(async (file: string, opts: { name?: string }) => {
      process.exitCode = await corpusIndexCommand(file, opts);
    });
  corpus
    .command("search")
    .description("search the indexed corpus as the pipeline would")
    .argument("<query>", "free text; query syntax in it is treated as words")
    .option("--json", "print the hits as JSON")
    .option("--limit <n>", "most hits to show", intArg(1, 100), 5)
    .option("--name <name>", "only this corpus")
    .action(async (query: string, opts: { json?: boolean; limit?: number; name?: string }) => {
      process.exitCode = await corpusSearchCommand(query, opts);
    });
  corpus
    .command("stats")
    .description("corpora in the store, with document and chunk counts")
    .option("--json", "print as JSON")
    .action(async (opts: { json?: boolean }) => {
      process.exitCode = await corpusStatsCommand(opts);
    });
}
