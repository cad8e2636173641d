import { Worker } from "node:worker_threads";
import { CHARS_PER_TOKEN } from "./context-truncation.js";

/**
 * Token counts for a reply that came without `usage` (some gateways and local servers leave it
 * out): counted from the prompt's and the reply's text with OpenAI's cl100k_base tokenizer
 * (js-tiktoken, which ships its ranks in the package: nothing is downloaded), and marked
 * estimated wherever they are shown. Another model's tokenizer counts differently, by some
 * percent: an estimate, never a zero. cl100k_base rather than o200k_base: building the
 * encoder parses its ranks once per process, about 0.8 s for cl100k_base and 3 s for
 * o200k_base; the counts differ by a few percent on English text.
 *
 * The encoder lives in one worker thread (token-count-worker.mjs), started on the first reply
 * without usage, so neither building it nor encoding a long prompt holds the event loop. Should
 * the thread fail, a text is counted at 4 characters a token, the usual rule of thumb for
 * English; the count is marked estimated either way.
 */
let worker: Worker | null = null;
let broken = false;
let nextId = 0;
const pending = new Map<number, (count: number | null) => void>();

function settleAll(): void {
  for (const resolve of pending.values()) resolve(null);
  pending.clear();
}

function thread(): Worker | null {
  if (broken) return null;
  if (worker) return worker;
  const w = new Worker(new URL("./token-count-worker.mjs", import.meta.url));
  w.on("message", ({ id, count }: { id: number; count: number | null }) => {
    const resolve = pending.get(id);
    pending.delete(id);
    resolve?.(count);
    // An idle thread must not keep a finished command alive.
    if (pending.size === 0) w.unref();
  });
  const fail = () => {
    broken = true;
    worker = null;
    settleAll();
  };
  w.on("error", fail);
  w.on("exit", fail);
  w.unref();
  worker = w;
  return w;
}

export async function estimateTokens(text: string): Promise<number> {
  if (!text) return 0;
  const rough = Math.ceil(text.length / CHARS_PER_TOKEN);
  const w = thread();
  if (!w) return rough;
  const id = nextId++;
  const count = await new Promise<number | null>((resolve) => {
    pending.set(id, resolve);
    w.ref();
    w.postMessage({ id, text });
  });
  return count ?? rough;
}
