import { open, readFile, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../core/contracts/errors.js";
import type { ResponseCache } from "../core/llm/model-client.js";

/**
 * DIR/responses.jsonl: every response the run's calls put in the response cache, one
 * `{key, value}` line each, so the folder itself holds what `--replay-cache DIR` replays
 * (the store's cache lives in MEDMMV_DATA_DIR, which another machine, or a fresh data dir,
 * does not have). Which calls are kept follows the cache mode: temperature-0 calls with
 * `deterministic`, every call with `all`.
 */
export const RESPONSES_FILE = "responses.jsonl";

export class FolderResponses {
  private writing: Promise<unknown> = Promise.resolve();

  /** Opened on the first response put, so a run refused before any call leaves no file behind. */
  private handle: Promise<FileHandle> | null = null;

  private constructor(
    private readonly entries: Map<string, Record<string, unknown>>,
    private readonly appendable: boolean,
    private readonly tornTail: boolean,
    readonly file: string,
  ) {}

  /** Reads DIR/responses.jsonl (a torn last line is skipped); `append` opens it for the run's own calls too. */
  static async open(dir: string, o: { append: boolean }): Promise<FolderResponses> {
    const file = path.join(dir, RESPONSES_FILE);
    const entries = new Map<string, Record<string, unknown>>();
    let text = "";
    try {
      text = await readFile(file, "utf8");
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw new MedmmvError("INVALID_INPUT", `cannot read ${file}: ${(e as Error).message}`, { cause: e });
    }
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      try {
        const v = JSON.parse(line) as { key?: unknown; value?: unknown };
        if (typeof v.key === "string" && v.value && typeof v.value === "object") entries.set(v.key, v.value as Record<string, unknown>);
      } catch {
        // a line torn by a kill: that call is made again (or, replaying, reported missing)
      }
    }
    return new FolderResponses(entries, o.append, text !== "" && !text.endsWith("\n"), file);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): Record<string, unknown> | null {
    return this.entries.get(key) ?? null;
  }

  put(key: string, value: Record<string, unknown>): Promise<void> {
    if (this.entries.has(key) || !this.appendable) return Promise.resolve();
    this.entries.set(key, value);
    this.handle ??= open(this.file, "a").then(async (h) => {
      if (this.tornTail) await h.write("\n");
      return h;
    });
    const handle = this.handle;
    const line = JSON.stringify({ key, value }) + "\n";
    const next = this.writing.then(async () => (await handle).write(line));
    this.writing = next.catch(() => undefined);
    return next.then(() => undefined);
  }

  async close(): Promise<void> {
    await this.writing;
    await (await this.handle?.catch(() => null))?.close();
  }
}

/** The run's cache: its own folder's responses first, then the store's; what is put goes to both. */
export function recordingCache(own: FolderResponses, store: ResponseCache | null): ResponseCache {
  return {
    get: async (key) => own.get(key) ?? (store ? await store.get(key) : null),
    put: async (key, value) => {
      await Promise.all([own.put(key, value), store?.put(key, value)]);
    },
  };
}

/**
 * `--replay-cache DIR`: calls are answered from DIR's responses (and this folder's own, on
 * --resume), never from the store. A call DIR does not hold fails with `replayMiss` — the
 * model is not asked — unless `thenCall` (`--replay-cache-then-call`): then it goes to the
 * model and is kept in this folder.
 */
export function replayingCache(from: FolderResponses, own: FolderResponses, o: { thenCall: boolean; onMiss: (key: string) => void }): ResponseCache {
  return {
    get: async (key) => {
      const hit = from.get(key) ?? own.get(key);
      if (hit || o.thenCall) return hit;
      o.onMiss(key);
      throw new MedmmvError("NOT_FOUND", `--replay-cache: a call is missing from ${from.file} (it holds ${from.size} responses); the model was not asked. Record with --cache all to keep sampled calls too, or pass --replay-cache-then-call to let missing calls go to the model`, { details: { replayMiss: true } });
    },
    put: (key, value) => own.put(key, value),
  };
}
