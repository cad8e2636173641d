import { subscribe, unsubscribe } from "node:diagnostics_channel";

// summary.html's renderer (summary-html.ts) brings vega and vega-lite: about 1.8 MB of code,
// a tenth of a second to compile and evaluate. A run needs it only when it ends. Imported with
// the runner, it delayed every eval's first model call by that much; imported at the end, it
// delays the summary. So it is loaded while the run's first model request is out: the run then
// waits on the model, and for most models its other opening calls wait for that first one too
// (the first contact with a model goes alone, core/llm/model-adaptation.ts; a catalog model on
// its own provider's API does not wait, and then the load overlaps the opening calls' replies).

type SummaryHtmlModule = typeof import("./summary-html.js");

let loading: Promise<SummaryHtmlModule> | null = null;

/** The summary page's renderer: the module already loaded or loading, or loaded now. */
export function summaryPage(): Promise<SummaryHtmlModule> {
  loading ??= import("./summary-html.js");
  return loading;
}

/** Published by undici (the model transport's and fetch's) once a request's headers are written to the socket. */
const REQUEST_SENT = "undici:client:sendHeaders";

/**
 * Start loading the summary page's renderer once the first HTTP request of the process after
 * this call is on the wire. Returns a stop for a run that ends without sending one (every item
 * resumed or answered from the cache): its summary then loads the renderer when it is written.
 */
export function loadSummaryPageOnFirstRequest(): () => void {
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    unsubscribe(REQUEST_SENT, onSent);
  };
  function onSent(): void {
    stop();
    // Not inside undici's publish: after the request's own write has returned. A failure to
    // load is reported where the page is written (summaryPage() again), not here.
    setImmediate(() => void summaryPage().catch(() => undefined));
  }
  subscribe(REQUEST_SENT, onSent);
  return stop;
}
