import type { ViewPayload } from "../view-payload.js";
import { append, h, section, table } from "./dom.js";

type Result = ViewPayload["result"];

/**
 * What the checks on the evidence agents did, each with its reason: TextDoctor's quotes that
 * were not found in the notes (dropped), and the image check's verdict on ImageDoctor's
 * findings (a flagged finding is rejected and retracted from the graph).
 */
export function renderEvidenceChecks(r: Result): HTMLElement {
  const s = section("Checks on the evidence", { id: "evidence-checks", wide: true });
  const checks = r.provenance.evidenceChecks;
  if (!checks) {
    append(s, h("p", { class: "muted" }, "This result does not record the evidence checks (it predates them)."));
    return s;
  }
  const rows: HTMLTableRowElement[] = [];
  for (const q of checks.textDoctor.rejected) rows.push(h("tr", { attrs: { "data-check": "text" } }, h("td", null, "TextDoctor quote"), h("td", null, q.label), h("td", null, h("span", { class: "badge contradicted" }, "rejected")), h("td", null, q.reason)));
  for (const attempt of checks.imageDoctor)
    for (const f of attempt.flagged)
      rows.push(h("tr", { attrs: { "data-check": "image" } }, h("td", null, `Image finding (check ${attempt.attempt})`), h("td", null, f.label), h("td", null, h("span", { class: "badge contradicted" }, "rejected")), h("td", null, f.issue)));
  const imageChecks = checks.imageDoctor.length;
  append(
    s,
    h(
      "p",
      { class: "small", attrs: { "data-testid": "checks-summary" } },
      `TextDoctor: ${checks.textDoctor.accepted} quote${checks.textDoctor.accepted === 1 ? "" : "s"} found in the notes, ${checks.textDoctor.rejected.length} rejected. `,
      imageChecks ? `Image check: ${imageChecks} pass${imageChecks === 1 ? "" : "es"}, ${checks.imageDoctor.reduce((n, a) => n + a.flagged.length, 0)} finding(s) rejected. ` : "Image check: did not run (no image, or no image finding). ",
      `Literature: ${checks.webSearch.pairsSearched} of ${checks.webSearch.pairsPlanned} planned searches made.`,
    ),
  );
  if (rows.length) append(s, table(["check", "what", "verdict", "reason"], rows, { "data-testid": "checks-table" }));
  else append(s, h("p", { class: "muted small" }, "No quote or image finding was rejected."));
  return s;
}
