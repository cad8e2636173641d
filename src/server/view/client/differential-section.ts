import type { ViewPayload } from "../view-payload.js";
import { append, fmt, h, section, table } from "./dom.js";

type Result = ViewPayload["result"];

/**
 * The ranked differential: each answer cluster with the runs that named it ("4 of 5"), the
 * wordings merged into it, its best path's CU and, when the equivalence judge could not
 * merge, why. Nothing for a result stored before differentials existed.
 */
export function renderDifferential(r: Result): HTMLElement | null {
  const rows = r.differential ?? [];
  if (rows.length === 0) return null;
  const s = section("Differential", { id: "differential", wide: true });
  const body = rows.map((d) =>
    h(
      "tr",
      { class: d.rank === 1 ? "selected" : "" },
      h("td", { class: "num", attrs: { "data-col": "rank" } }, d.rank),
      h("td", { attrs: { "data-col": "diagnosis" } }, `${d.answer.option ? `(${d.answer.option}) ` : ""}${d.answer.text}`),
      h("td", { attrs: { "data-col": "runs" } }, `${d.rollouts} of ${d.of}`),
      h("td", { class: "num", attrs: { "data-col": "bestCu" } }, fmt(d.bestCu, 3)),
      h("td", { attrs: { "data-col": "path" } }, d.candidateIndex !== null ? (r.candidates[d.candidateIndex]?.pathId ?? "") : ""),
      h("td", { class: "small", attrs: { "data-col": "wordings" } }, d.wordings.filter((w) => w !== d.answer.text).join("; ")),
      h("td", { class: "small", attrs: { "data-col": "code" } }, d.code ? `${d.code.code} ${d.code.display}` : ""),
    ),
  );
  const note = r.provenance.answerClusters?.note;
  append(
    s,
    h("p", { class: "small muted" }, "Rollout answers grouped by meaning; rank 1 is the selected answer, the rest by runs, then best CU."),
    table(["rank", "diagnosis", "runs", ["best CU", "num"], "path", "also worded", "code"], body, { "data-testid": "differential-table" }),
    ...(note ? [h("p", { class: "small bad" }, note)] : []),
  );
  return s;
}
