// Token counts for replies without `usage` (token-estimate.ts), in a thread of their own: building
// js-tiktoken's cl100k_base encoder parses its ranks (about 0.8 s) and a long text takes tens of
// milliseconds to encode; on the main thread either would stall every request of the process.
// Plain JavaScript on purpose: a worker is started by Node itself, whatever loads the TypeScript.
// Protocol: { id, text } → { id, count } (count null when the text could not be encoded).
import { parentPort } from "node:worker_threads";
import { Tiktoken } from "js-tiktoken/lite";
import ranks from "js-tiktoken/ranks/cl100k_base";

const encoder = new Tiktoken(ranks);

parentPort.on("message", ({ id, text }) => {
  let count = null;
  try {
    // "all": a text that spells a special token ("<|endoftext|>") is counted, not refused.
    count = encoder.encode(text, "all").length;
  } catch {
    count = null;
  }
  parentPort.postMessage({ id, count });
});
