import type { ViewPayload } from "../view-payload.js";
import { append, clear, h } from "./dom.js";

type Result = ViewPayload["result"];
type Claim = NonNullable<Result["path"]>["steps"][number]["claims"][number];

/** A label short enough for a chip (the full label is in the node panel and the tooltip). */
function clipLabel(label: string): string {
  return label.length <= 48 ? label : `${label.slice(0, 47)}\u2026`;
}

export interface ClaimRef {
  /** s<step>c<claim>, 1-based, as the hd-supervisor numbers them. */
  id: string;
  claim: Claim;
}

/**
 * A claim's stage from the selected path's last detector report (stages are judged per claim),
 * falling back to its step's stage.
 */
function claimStages(result: Result): Map<string, string> {
  const selected = result.candidates.find((c) => c.selected) ?? result.candidates.find((c) => c.pathId === result.path?.id);
  const last = selected?.hdReports[selected.hdReports.length - 1];
  return new Map((last?.claims ?? []).map((c) => [c.claim, c.stage]));
}

/**
 * The selected path step by step. Each claim is a button coloured by its verdict; activating it
 * hands its evidence ids to `onClaim`, and its evidence chips open a node's provenance.
 */
export function renderPathPanel(
  host: HTMLElement,
  result: Result,
  handlers: { onClaim: (ref: ClaimRef, el: HTMLElement) => void; onNode: (id: string) => void; hasNode: (id: string) => boolean; labelOf?: (id: string) => string | null },
): ClaimRef[] {
  clear(host);
  append(host, h("h2", null, "Selected path"));
  const path = result.path;
  if (!path) {
    append(host, h("p", { class: "muted" }, result.abstentionReason ? `No path selected: ${result.abstentionReason}` : "No path was selected for this case."));
    return [];
  }
  const stages = claimStages(result);
  append(
    host,
    h("p", { class: "small" }, h("span", { class: "chip" }, path.id), " ", path.summary),
    h("p", { class: "small muted" }, "Click a claim to highlight the evidence it rests on; click an id or a node for its provenance."),
  );
  const refs: ClaimRef[] = [];
  path.steps.forEach((step, i) => {
    const box = h(
      "div",
      { class: "step", attrs: { "data-step": String(i + 1) } },
      h("div", { class: "small" }, h("b", null, `Step ${i + 1} `), h("span", { class: "badge stage" }, step.stage)),
      h("div", { class: "text" }, step.text),
    );
    step.claims.forEach((claim, j) => {
      const id = `s${i + 1}c${j + 1}`;
      const ref = { id, claim };
      refs.push(ref);
      const verdict = claim.verdict ?? "unknown";
      const ids = h("span", { class: "ids" });
      for (const ev of claim.evidence) {
        const present = handlers.hasNode(ev);
        // Shown by its label (the id in the tooltip): an id says nothing to a clinician.
        const label = handlers.labelOf?.(ev) ?? null;
        const chip = present
          ? h("button", { class: "chip label", attrs: { type: "button", "data-node": ev }, title: `${ev}: show provenance` }, clipLabel(label ?? ev))
          : h("span", { class: "chip missing", title: "this id is not in the evidence graph" }, ev);
        if (present) {
          chip.addEventListener("click", (e) => {
            e.stopPropagation();
            handlers.onNode(ev);
          });
        }
        append(ids, chip);
      }
      if (claim.evidence.length === 0) append(ids, h("span", { class: "muted small" }, "no evidence cited"));
      // The claim is a button of its own beside its evidence buttons (a button inside a button is neither valid nor reachable);
      // a click anywhere on the claim but an evidence id highlights its evidence.
      const el = h(
        "div",
        { class: `claim ${verdict}`, attrs: { "data-claim": id, "data-verdict": verdict } },
        h(
          "button",
          { class: "claim-main", attrs: { type: "button" }, title: "highlight the evidence of this claim" },
          h("span", { class: `badge ${verdict}` }, verdict),
          " ",
          h("span", { class: "badge stage" }, stages.get(claim.text) ?? step.stage),
          " ",
          h("span", { class: "claim-text" }, claim.text),
        ),
        ids,
      );
      el.addEventListener("click", () => handlers.onClaim(ref, el));
      append(box, el);
    });
    append(host, box);
  });
  return refs;
}
