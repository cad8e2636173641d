import type { ViewPayload } from "../view-payload.js";
import { append, fmt, h } from "./dom.js";

const STOPPED = new Set(["CONTENT_FILTERED", "MODEL_REFUSED"]);
const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/**
 * How sure, in words, at the top of the page: the state by the shared rule (answer-state.ts,
 * the CDS card's indicator too) and why, the answer, how many runs chose it, the selected
 * path's claims by verdict, what was not examined (each provider's words once), the EHR's
 * feedback on the card; the paper's notation after it, for those who want it.
 */
export function renderSummary(payload: ViewPayload): HTMLElement {
  const r = payload.result;
  const s = payload.summary;
  const box = h("section", { class: `summary state-${s.state}`, attrs: { "data-testid": "summary", "aria-labelledby": "summary-title" } });
  const why = s.reasons.length
    ? s.reasons.join("; ")
    : s.imageNote
      ? "every run examined the whole case (the images as another model's description), most chose this answer, and every claim of its path is supported by the evidence"
      : "every run examined the whole case, most chose this answer, and every claim of its path is supported by the evidence";
  append(
    box,
    h("h2", { class: "visually-hidden", attrs: { id: "summary-title" } }, "How sure"),
    h("p", { class: "state-line" }, h("span", { class: `badge state ${s.state}`, attrs: { "data-testid": "state" } }, s.state), " ", h("span", { attrs: { "data-testid": "state-text" } }, `${s.state}: ${why}`)),
  );
  const facts: Array<HTMLElement | string> = [];
  facts.push(h("b", { class: "answer", attrs: { "data-testid": "answer" } }, s.answer ?? (r.status === "abstained" ? "no answer (abstained)" : "no answer")));
  if (s.runs) facts.push(h("span", { attrs: { "data-testid": "runs" } }, `${s.runs.chose} of ${s.runs.of} runs`));
  const c = s.claims;
  if (c.supported + c.unsupported + c.rejected > 0)
    facts.push(h("span", { attrs: { "data-testid": "claims" } }, `${c.supported} supported, ${c.unsupported} unsupported, ${c.rejected} rejected ${c.supported + c.unsupported + c.rejected === 1 ? "claim" : "claims"}`));
  append(box, h("p", { class: "facts" }, ...facts.flatMap((f, i) => (i ? [" \u00b7 ", f] : [f]))));

  // Refusals and filters once, with the provider's words (several agents stopped with one message show it once).
  const stopped = (r.provenance.failures ?? []).filter((f) => STOPPED.has(f.code));
  if (s.notExamined.length) {
    const messages = [...new Set(stopped.map((f) => f.message))];
    append(
      box,
      h(
        "p",
        { class: "not-examined", attrs: { "data-testid": "not-examined" } },
        h("b", null, "Not examined: "),
        s.notExamined.map((n) => `${n.what} (${n.agent}: ${n.why})`).join("; "),
        ...(messages.length ? [h("br"), h("span", { class: "small" }, `What the provider stated: ${messages.join(" / ")}`)] : []),
      ),
    );
  }
  // A text-only answering model saw the vision model's description of the images, not the images: said beside the state.
  if (s.imageNote) append(box, h("p", { class: "small warn", attrs: { "data-testid": "image-note" } }, h("b", null, "Images: "), s.imageNote));
  for (const f of payload.record?.feedback ?? []) append(box, h("p", { class: "small", attrs: { "data-testid": "feedback" } }, h("b", null, "CDS card feedback: "), `${f.text} \u2014 ${f.by}, ${f.at}`));
  append(
    box,
    h(
      "p",
      { class: "small notation" },
      `In the paper's notation: answer support ${fmt(r.answerSupport)} (share of the final paths' CU behind the answer) \u00b7 RGM ${fmt(r.stability.rgm, 3)} \u00b7 entropy ${fmt(r.stability.entropy, 3)} bits \u00b7 ${plural(r.candidates.length, "candidate path")}; the scores are under "Candidate paths".`,
    ),
  );
  return box;
}
