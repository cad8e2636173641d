import type { LiveState, ViewLive, ViewPayload } from "../view-payload.js";
import { append, h } from "./dom.js";
import { eventWords, stageOf, STAGES, type StageId } from "./live-words.js";

declare global {
  interface Window {
    __medmmvLive?: LiveState;
  }
}

/** The event types the page listens for. */
const EVENT_TYPES = ["status", "rollout", "evidence", "hd-verdict", "repair", "path-scored", "branch-failed", "scores", "final"];

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
  // Announced to screen readers as it changes (the status, a failure); the steps list is a log.
  const note = h("p", { class: "meta", attrs: { "data-testid": "live-note", role: "status", "aria-live": "polite" } }, "The analysis is running. This page shows each step as it happens and becomes the audit view when the case finishes.");
  const list = h("ol", { class: "progress", attrs: { "data-testid": "progress" } });
  // A log around the list (a role on the <ol> itself would hide its items' list semantics).
  const log = h("div", { attrs: { role: "log", "aria-live": "polite", "aria-label": "steps of the analysis", "data-testid": "progress-log" } }, list);
  const stageItems = STAGES.map((s) => h("li", { attrs: { "data-stage": s.id } }, s.label));
  const stageBar = h("ol", { class: "stages", attrs: { "data-testid": "stages", "aria-label": "stage of the analysis" } }, ...stageItems);
  const question = live.question ? h("p", { class: "question", attrs: { "data-testid": "live-question" } }, h("b", null, "Question: "), live.question) : null;
  append(
    app,
    h("header", { class: "top" }, h("h1", null, "Audit view \u2014 case ", h("span", { attrs: { "data-testid": "case-id" } }, live.caseId)), h("span", { class: "answer" }, badge)),
    h("main", null, h("section", { class: "panel wide", attrs: { id: "progress-section" } }, h("h2", null, "Progress"), question, stageBar, note, h("h3", null, "Steps so far"), log)),
  );
  /** The stage bar: the stages before `id` done, `id` current (never backwards: events of several stages interleave). */
  let stageAt = -1;
  const setStage = (id: StageId) => {
    const at = STAGES.findIndex((s) => s.id === id);
    if (at <= stageAt) return;
    stageAt = at;
    stageItems.forEach((li, i) => {
      li.className = i < at || id === "finished" ? "done" : i === at ? "current" : "";
      if (i === at) li.setAttribute("aria-current", "step");
      else li.removeAttribute("aria-current");
    });
  };
  setStage(live.status === "queued" ? "queued" : "evidence");
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
    append(list, h("li", { attrs: { "data-type": e.type } }, h("span", { class: "muted" }, time), " ", eventWords(e.type, e.data ?? {})));
    const stage = stageOf(e.type, e.data ?? {});
    if (stage) setStage(stage);
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
  for (const type of EVENT_TYPES) source.addEventListener(type, onEvent);
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
