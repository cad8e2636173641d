import { setMaxListeners } from "node:events";
import { describeError, MedmmvError } from "../core/contracts/errors.js";
import type { ResponseCache } from "../core/llm/model-client.js";
import { openSearchProvider } from "../core/search/create-search-provider.js";
import { itemMethods, type ItemMethods } from "./item-methods.js";
import type { FromItemWorker, ToItemWorker } from "./item-worker-protocol.js";

/**
 * One item process of `medmmv eval --workers N` (started by item-workers.ts as the hidden
 * command `medmmv eval-worker`): it builds the same pipelines and method as the runner from
 * the runner's settings, answers the items it is sent, and asks the runner for cached
 * responses. Returns when the runner closes it or goes away.
 */
export async function runItemWorker(): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) throw new MedmmvError("INVALID_INPUT", "eval-worker is started by `medmmv eval --workers N`, not by hand");
  const post = (m: FromItemWorker): void => {
    // The runner gone mid-reply: the disconnect handler ends this process.
    if (process.connected) send(m);
  };
  const ctrl = new AbortController();
  // Every item in flight and its pipeline listen on this one signal.
  setMaxListeners(0, ctrl.signal);

  // The response cache is the runner's (one store, one writer): a get is a round trip.
  let nextReq = 0;
  const pendingGets = new Map<number, { resolve: (v: Record<string, unknown> | null) => void; reject: (e: Error) => void }>();
  const cache: ResponseCache = {
    get: (key) =>
      new Promise((resolve, reject) => {
        const req = nextReq++;
        pendingGets.set(req, { resolve, reject });
        post({ type: "cacheGet", req, key });
      }),
    put: async (key, value) => post({ type: "cachePut", key, value }),
  };

  let methods: ItemMethods | null = null;
  const runTask = async (m: Extract<ToItemWorker, { type: "run" }>): Promise<void> => {
    try {
      if (!methods) throw new MedmmvError("INTERNAL", "an item arrived before the item process was set up");
      const out = await methods.methodFor(m.run).run(m.prepared, ctrl.signal, {
        item: m.item,
        checkpoint: async () => {
          throw new MedmmvError("INTERNAL", "a method that checkpoints runs in the runner's process, not in an item process");
        },
      });
      post({ type: "done", task: m.task, out });
    } catch (err) {
      post({ type: "threw", task: m.task, error: describeError(err) });
    }
  };

  // Ctrl-C reaches every process of the terminal's group: the runner decides what it means
  // (stop starting items, then quit), and this process ends when the runner tells it or goes.
  process.on("SIGINT", () => undefined);
  await new Promise<void>((resolve) => {
    process.on("disconnect", () => {
      ctrl.abort();
      resolve();
    });
    process.on("message", (m: ToItemWorker) => {
      switch (m.type) {
        case "init":
          void (async () => {
            try {
              const search = await openSearchProvider(m.config);
              methods = itemMethods(m.settings, m.config, { cache: m.cached ? cache : null, cacheScope: m.cacheScope, search });
              methods.pipelineFor(0).limiter.onRateLimited(() => post({ type: "rateLimited" }));
              post({ type: "ready" });
            } catch (err) {
              post({ type: "initFailed", error: describeError(err) });
            }
          })();
          break;
        case "run":
          void runTask(m);
          break;
        case "cacheValue": {
          const p = pendingGets.get(m.req);
          pendingGets.delete(m.req);
          if (m.error !== undefined) p?.reject(m.replayMiss ? new MedmmvError("NOT_FOUND", m.error, { details: { replayMiss: true } }) : new MedmmvError("STORE_FAILED", m.error));
          else p?.resolve(m.value);
          break;
        }
        case "abort":
          ctrl.abort();
          break;
        case "close":
          ctrl.abort();
          process.disconnect();
          break;
      }
    });
    post({ type: "started" });
  });
}
