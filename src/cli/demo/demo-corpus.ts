import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MedmmvError } from "../../core/contracts/errors.js";
import { indexCorpusFile } from "../../core/search/local/index-corpus-file.js";
import { openCorpusIndex } from "../../core/search/local/open-corpus-index.js";

/** Every bundled corpus, by name: the demo cases' topics (chest pain, pneumonia, marrow morphology). */
const DEMO_CORPORA: Record<string, string> = {
  cardiology: fileURLToPath(new URL("../../../examples/corpus/cardiology.jsonl", import.meta.url)),
  respiratory: fileURLToPath(new URL("../../../examples/corpus/respiratory.jsonl", import.meta.url)),
  haematology: fileURLToPath(new URL("../../../examples/corpus/haematology.jsonl", import.meta.url)),
};

/**
 * The demo's offline literature search: the bundled example corpora indexed into a
 * throwaway embedded store, and the environment that points MEDMMV_SEARCH=local at it
 * (DATABASE_URL blanked so a user's Postgres is never written to by the demo). The store goes
 * in the system's temporary directory, or, where that cannot be written (a container started
 * with --read-only and no /tmp), beside the demo's results in `fallbackDir`.
 */
export async function prepareDemoCorpus(fallbackDir: string): Promise<{ env: Record<string, string>; dispose(): Promise<void> }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-demo-corpus-")).catch(async (err: NodeJS.ErrnoException) => {
    if (!["EROFS", "EACCES", "EPERM", "ENOENT"].includes(err.code ?? "")) throw err;
    return mkdtemp(path.join(fallbackDir, ".medmmv-demo-corpus-"));
  });
  const dispose = () => rm(dataDir, { recursive: true, force: true });
  try {
    const index = await openCorpusIndex({ databaseUrl: null, dataDir });
    try {
      for (const [name, file] of Object.entries(DEMO_CORPORA)) {
        const r = await indexCorpusFile(index, file, name);
        if (r.errors.length) throw new MedmmvError("INTERNAL", `the bundled ${name} corpus has ${r.errors.length} bad line(s), first: line ${r.errors[0]!.line}`);
      }
    } finally {
      await index.close();
    }
  } catch (e) {
    await dispose();
    throw e;
  }
  return { env: { MEDMMV_SEARCH: "local", MEDMMV_DATA_DIR: dataDir, DATABASE_URL: "" }, dispose };
}
