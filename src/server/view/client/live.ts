import type { LiveState, ViewLive, ViewPayload } from "../view-payload.js";
import { append, h } from "./dom.js";

declare global {
  interface Window {
    __medmmvLive?: LiveState;
  }
}

/** What each pipeline event is, in the words of the page. */
const TITLES: Record<string, string> = {
  status: "Status",
  rollout: "Rollout",
  evidence: "Evidence",
  "hd-verdict": "Hallucination check",
  repair: "Refinement",
  "path-scored": "Path scored",
  "branch-failed": "Branch failed",
  scores: "Selection",
  final: "Finished",
};

/** The event's own short fields (numbers, flags, short texts), as `name value` pairs; nested data is left out. */
function describe(data: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(data)) {
    if (typeof v === "number") parts.push(`${k} ${Number.isInteger(v) ? v : v.toFixed(3)}`);
    else if (typeof v === "boolean") parts.push(`${k} ${v ? "yes" : "no"}`);
    else if (typeof v === "string") parts.push(`${k} ${v.length > 80 ? `${v.slice(0, 79)}\u2026` : v}`);
    if (parts.length >= 6) break;
  }
  return parts.join(" \u00b7 ");
}

interface StreamedEvent {
  seq: number;
  type: string;
  at: string;
  data: Record<string, unknown>;
}

/**
 * The page of a case that has not finished: its events as they happen (history first, then
 * live, over EventSource), then, on the final event, the finished payload fetched from the
 * same origin and handed to `showAudit`, which draws the audit view in place of this one.
 * A failed or deleted case stays on this page and says why.
 */
export function startLive(live: ViewLive, app: HTMLElement, showAudit: (payload: ViewPayload) => void): void {
  const state: LiveState = { status: live.status, events: 0, finished: false, stopped: null };
  window.__medmmvLive = state;
  document.title = `medmmv \u2014 case ${live.caseId} in progress`;
  app.textContent = "";
  const badge = h("span", { class: `badge ${live.status}`, attrs: { "data-testid": "live-status" } }, live.status);
  const note = h("p", { class: "meta", attrs: { "data-testid": "live-note" } }, "The analysis is running. This page shows each step as it happens and becomes the audit view when the case finishes.");
  const list = h("ol", { class: "progress", attrs: { "data-testid": "progress" } });
  append(
    app,
    h("header", { class: "top" }, h("h1", null, "Audit view \u2014 case ", h("span", { attrs: { "data-testid": "case-id" } }, live.caseId)), h("span", { class: "answer" }, badge)),
    h("main", null, h("section", { class: "panel wide", attrs: { id: "progress-section" } }, h("h2", null, "Progress"), note, list)),
  );
  const setStatus = (status: string) => {
    state.status = status;
    badge.textContent = status;
    badge.className = `badge ${status}`;
  };
  const stop = (why: string) => {
    state.stopped = why;
    note.textContent = why;
    note.classList.add("bad");
  };

  const source = new EventSource(live.eventsUrl);
  const onEvent = (ev: MessageEvent<string>) => {
    let e: StreamedEvent;
    try {
      e = JSON.parse(ev.data) as StreamedEvent;
    } catch {
      return;
    }
    state.events++;
    const time = new Date(e.at).toLocaleTimeString();
    append(list, h("li", { attrs: { "data-type": e.type } }, h("span", { class: "muted" }, time), " ", h("b", null, TITLES[e.type] ?? e.type), " ", describe(e.data ?? {})));
    if (e.type === "status" && typeof e.data?.status === "string") setStatus(e.data.status);
    if (e.type === "final") {
      source.close();
      const status = typeof e.data?.status === "string" ? e.data.status : "finished";
      setStatus(status);
      const error = e.data?.error as { code?: string; message?: string } | undefined;
      const failure = `The analysis failed${error?.message ? `: ${error.code ?? "error"} \u2014 ${error.message}` : "."}`;
      note.textContent = "The analysis finished; loading its audit view\u2026";
      // A finished case with a result (abstained, and failed ones the pipeline could still report) has an audit view
      // that says why; a case that failed without one has only its final event's reason.
      void fetch(live.payloadUrl, { headers: { accept: "application/json" }, credentials: "same-origin" })
        .then(async (res) => {
          if (res.status === 409 && status === "failed") return null;
          if (!res.ok) throw new Error(((await res.json().catch(() => ({}))) as { message?: string }).message ?? `the server answered ${res.status}`);
          return (await res.json()) as ViewPayload;
        })
        .then((payload) => {
          if (!payload) return stop(failure);
          state.finished = true;
          showAudit(payload);
        })
        .catch((err: unknown) => stop(`The analysis finished, but its audit view could not be loaded: ${err instanceof Error ? err.message : String(err)}. Reload the page.`));
    }
  };
  for (const type of Object.keys(TITLES)) source.addEventListener(type, onEvent);
  source.addEventListener("deleted", () => {
    source.close();
    setStatus("deleted");
    stop("This case was deleted.");
  });
  // EventSource reconnects by itself (from the last event id); once it gives up the link is no longer accepted.
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED && !state.stopped && !state.finished) stop("The connection to the server was refused (the link may have expired). Reload the page or ask for a new link.");
  });
}
