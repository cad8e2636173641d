import type { ViewDicomProvenance, ViewPayload } from "../view-payload.js";
import { lineDiff } from "./diff.js";
import { append, dataImage, fmt, h, kv, section, setWidthPercent, table } from "./dom.js";
import { renderScriptedBanner } from "./scripted-banner.js";

type Result = ViewPayload["result"];
type Path = NonNullable<Result["path"]>;

export function renderHeader(payload: ViewPayload): HTMLElement[] {
  const r = payload.result;
  const header = h(
    "header",
    { class: "top" },
    h("h1", null, "Audit view \u2014 case ", h("span", { attrs: { "data-testid": "case-id" } }, r.caseId)),
    h("span", { class: "meta" }, `analysis ${r.status}`),
    ...(payload.record ? [h("span", { class: "meta", attrs: { "data-testid": "submitted-by" } }, `submitted by ${payload.record.submittedBy || "a local run"} at ${payload.record.createdAt}`)] : []),
    h(
      "span",
      { class: "meta" },
      payload.mode === "offline" ? `offline report generated ${payload.generatedAt}` : `served ${payload.generatedAt}`,
    ),
  );
  const notes: HTMLElement[] = [h("div", { class: "disclaimer" }, r.disclaimer)];
  const scripted = renderScriptedBanner(r);
  if (scripted) notes.unshift(scripted);
  if (r.abstentionReason) notes.push(h("div", { class: "disclaimer" }, `Abstained: ${r.abstentionReason}`));
  if (r.error) notes.push(h("div", { class: "disclaimer" }, `Error ${r.error.code}: ${r.error.message}`));
  return [header, ...notes];
}

export function renderCandidates(r: Result): HTMLElement {
  const s = section("Candidate paths", { id: "candidates", wide: true });
  const rows = r.candidates.map((c) =>
    h(
      "tr",
      { class: c.selected ? "selected" : "", attrs: { "data-path-id": c.pathId } },
      h("td", { attrs: { "data-col": "pathId" } }, c.pathId),
      h("td", { attrs: { "data-col": "answers" } }, `${c.initialAnswer ?? "\u2014"} \u2192 ${c.finalAnswer ?? "\u2014"}`),
      h("td", { class: "num", attrs: { "data-col": "repairs" } }, c.repairs),
      h("td", { class: "num", attrs: { "data-col": "multiplicity" } }, c.multiplicity ?? 1),
      h("td", { class: "num", attrs: { "data-col": "evidence" } }, fmt(c.scores?.evidence, 3)),
      h("td", { class: "num", attrs: { "data-col": "coherence" } }, fmt(c.scores?.coherence, 3)),
      h("td", { class: "num", attrs: { "data-col": "repairPenalty" } }, fmt(c.scores?.repairPenalty, 3)),
      h("td", { class: "num", attrs: { "data-col": "cu" } }, fmt(c.scores?.cu, 3)),
      h("td", { attrs: { "data-col": "selected" } }, c.selected ? "\u2713 selected" : ""),
      h("td", { class: "small bad", attrs: { "data-col": "error" } }, c.error ? `${c.error.code}: ${c.error.message}` : ""),
    ),
  );
  append(
    s,
    h("p", { class: "small muted" }, "CU = w_e\u00b7S_evidence + w_c\u00b7S_coherence \u2212 w_r\u00b7P_repair; the highest CU is selected."),
    table(
      ["path", "initial \u2192 final", ["repairs", "num"], ["rollouts", "num"], ["S_evidence", "num"], ["S_coherence", "num"], ["P_repair", "num"], ["CU", "num"], "selected", "error"],
      rows,
      { "data-testid": "candidates-table" },
    ),
  );
  return s;
}

/** A path as lines, so two attempts can be diffed line by line. */
export function pathLines(p: Path): string[] {
  const lines = [`Summary: ${p.summary}`];
  p.steps.forEach((s, i) => {
    lines.push(`${i + 1}. [${s.stage}] ${s.text}`);
    for (const c of s.claims) lines.push(`   - ${c.text}`);
  });
  return lines;
}

function diffBlock(before: Path, after: Path): HTMLElement {
  const pre = h("pre", { class: "diff" });
  const lines = lineDiff(pathLines(before), pathLines(after));
  for (const d of lines) {
    append(pre, h("span", { class: d.op }, `${d.op === "add" ? "+ " : d.op === "del" ? "- " : "  "}${d.text}`));
  }
  if (lines.every((d) => d.op === "same")) append(pre, h("span", { class: "same" }, "(the repair left the path text unchanged)"));
  return pre;
}

export function renderRepairs(r: Result): HTMLElement {
  const s = section("Repair history", { id: "repairs", wide: true });
  if (r.candidates.length === 0) append(s, h("p", { class: "muted" }, "No candidate paths."));
  for (const c of r.candidates) {
    const details = h(
      "details",
      { attrs: { "data-path-id": c.pathId } },
      h("summary", null, `${c.pathId}: ${c.hdReports.length} detector report${c.hdReports.length === 1 ? "" : "s"}, ${c.repairs} repair${c.repairs === 1 ? "" : "s"}${c.selected ? " (selected)" : ""}`),
    );
    details.open = c.selected || c.repairs > 0;
    c.hdReports.forEach((rep, i) => {
      const box = h(
        "div",
        { class: "attempt", attrs: { "data-attempt": String(rep.attempt) } },
        h(
          "div",
          null,
          h("b", null, `Attempt ${rep.attempt}: `),
          rep.hallucinationDetected ? h("span", { class: "bad" }, "hallucination detected") : h("span", { class: "ok" }, "no hallucination detected"),
          " ",
          h("span", { class: "badge" }, rep.severity),
          " ",
          h("span", { class: "small muted" }, `recommendation: ${rep.recommendation}`),
        ),
      );
      if (rep.issues.length) append(box, h("div", { class: "small" }, "Issues:"), h("ul", { class: "small" }, ...rep.issues.map((x) => h("li", null, x))));
      if (rep.contextConflict) append(box, pathwayStepper(rep.contextConflict));
      if (rep.improvementInstructions.length) {
        append(box, h("div", { class: "small" }, "Instructions:"), h("ul", { class: "small" }, ...rep.improvementInstructions.map((x) => h("li", null, x))));
      }
      if (rep.claims.length) {
        append(
          box,
          table(
            ["claim", "verdict", "stage", "evidence"],
            rep.claims.map((cl) =>
              h("tr", null, h("td", null, cl.claim), h("td", null, h("span", { class: `badge ${cl.verdict}` }, cl.verdict)), h("td", null, cl.stage), h("td", null, ...cl.evidence.map((e) => h("span", { class: "chip" }, e)))),
            ),
          ),
        );
      }
      const next = c.hdReports[i + 1];
      if (rep.path && next?.path) append(box, h("div", { class: "small" }, `Change made by the repair after attempt ${rep.attempt}:`), diffBlock(rep.path, next.path));
      else if (rep.hallucinationDetected && !next) append(box, h("p", { class: "small warn" }, "No further attempt (repair budget spent or path failed)."));
      append(details, box);
    });
    if (c.error) append(details, h("p", { class: "bad small" }, `Failed: ${c.error.code}: ${c.error.message}`));
    append(s, details);
  }
  return s;
}

type ContextConflict = NonNullable<Result["candidates"][number]["hdReports"][number]["contextConflict"]>;

/** The path's labelled pathway steps one after another, the ones that leave the pathway marked, and the closest valid path. */
function pathwayStepper(c: ContextConflict): HTMLElement {
  const off = new Set(c.steps);
  return h(
    "div",
    { class: "small", attrs: { "data-testid": "pathway-stepper" } },
    h("div", null, `Pathway "${c.pathway}", step by step:`),
    h(
      "ol",
      { class: "stepper" },
      ...Object.entries(c.labels).map(([step, category]) => h("li", { class: off.has(step) ? "off" : "" }, h("b", null, step), `: ${category}`, off.has(step) ? " \u2014 fits no valid path" : "")),
    ),
    c.closestPath ? h("div", null, `Closest valid path: ${c.closestPath}`) : null,
  );
}

export function renderHallucinations(r: Result): HTMLElement {
  const s = section("Detector findings", { id: "hallucinations" });
  if (r.hallucinations.length === 0) {
    append(s, h("p", { class: "muted" }, "The detector flagged nothing."));
    return s;
  }
  append(
    s,
    table(
      ["path", "attempt", "stage", "severity", "claim", "issue", "resolved"],
      r.hallucinations.map((x) =>
        h("tr", null, h("td", null, x.pathId), h("td", { class: "num" }, x.attempt), h("td", null, x.stage), h("td", null, x.severity), h("td", null, x.claim), h("td", null, x.issue), h("td", null, x.resolved ? "yes" : h("span", { class: "bad" }, "no"))),
      ),
    ),
  );
  return s;
}

export function renderStability(r: Result): HTMLElement {
  const s = section("Stability", { id: "stability" });
  const st = r.stability;
  append(
    s,
    h("div", { class: "small" }, "Rollout answers: ", ...st.rolloutAnswers.map((a) => h("span", { class: "chip" }, a ?? "\u2014"))),
    kv([
      ["RGM", fmt(st.rgm, 3)],
      ["entropy (bits)", fmt(st.entropy, 3)],
    ]),
  );
  const bars = h("div", { class: "bars" });
  for (const [answer, p] of Object.entries(st.distribution).sort((x, y) => y[1] - x[1])) {
    const fill = h("div", { class: "fill" });
    setWidthPercent(fill, p);
    append(bars, h("div", { class: "bar" }, h("span", null, answer), h("div", { class: "track" }, fill), h("span", { class: "small" }, `${fmt(p * 100, 0)}%`)));
  }
  append(s, h("h3", null, "Answer distribution"), bars);
  return s;
}

export function renderUsage(r: Result): HTMLElement {
  const s = section("Usage", { id: "usage" });
  const u = r.usage;
  append(
    s,
    kv([
      ["LLM calls", u.llmCalls],
      ["search calls", u.searchCalls],
      ["tokens (prompt / completion)", `${u.promptTokens} / ${u.completionTokens}`],
      ["prompt tokens from the provider's cache", u.cachedPromptTokens ?? 0],
      ["image data sent (KiB, every call's copy)", fmt((u.imageBytes ?? 0) / 1024, 1)],
      ["image tokens (as the provider states them)", u.imageTokens ? u.imageTokens : "not stated"],
      ...(u.reasoningTokens ? [["reasoning tokens (part of completion, billed as output)", u.reasoningTokens] as [string, number]] : []),
      ["cost (USD)", fmt(u.costUsd, 4)],
      ...(r.budgetExhausted ? [["budget exhausted", `remaining repairs skipped on ${r.budgetExhausted.pathsWithRepairsSkipped.join(", ")}`] as [string, string]] : []),
      ["wall time", `${fmt(u.wallMs / 1000, 2)} s`],
      ["critical path calls", u.criticalPathCalls ?? "\u2014"],
      ["cache hits", u.cacheHits ?? 0],
    ]),
    h("h3", null, "By agent"),
    table(
      ["agent", ["calls", "num"], ["prompt tok.", "num"], ["cached tok.", "num"], ["completion tok.", "num"], ["cost", "num"], ["time (ms)", "num"], ["failures", "num"]],
      Object.entries(u.byAgent).map(([agent, a]) =>
        h(
          "tr",
          { attrs: { "data-agent": agent } },
          h("td", null, agent),
          h("td", { class: "num" }, a.calls),
          h("td", { class: "num" }, a.promptTokens ?? "\u2014"),
          h("td", { class: "num" }, a.cachedPromptTokens ?? 0),
          h("td", { class: "num" }, a.completionTokens ?? "\u2014"),
          h("td", { class: "num" }, fmt(a.costUsd, 4)),
          h("td", { class: "num" }, fmt(a.latencyMs, 0)),
          h("td", { class: "num" }, a.failures ?? 0),
        ),
      ),
    ),
  );
  return s;
}

export function renderProvenance(r: Result): HTMLElement {
  const s = section("Provenance", { id: "provenance" });
  const p = r.provenance;
  append(
    s,
    kv([
      ["version", p.version],
      ["started", p.startedAt],
      ["finished", p.finishedAt],
      ["search", p.search ? `${p.search.provider} (${p.search.enabled ? "enabled" : "disabled"})${p.search.note ? ` \u2014 ${p.search.note}` : ""}` : "\u2014"],
    ]),
    h("h3", null, "Models"),
    kv([...Object.entries(p.models).map(([role, model]): [string, string] => [role, model]), ...(new Set(p.rolloutModels ?? []).size > 1 ? [["rollouts", p.rolloutModels!.join(", ")] as [string, string]] : [])]),
    h("h3", null, "Prompt versions"),
    kv(Object.entries(p.prompts).map(([name, hash]) => [name, h("span", { class: "chip" }, hash)])),
    h("h3", null, "Configuration"),
    // Scrolls: focusable so a keyboard reaches it too.
    h("pre", { attrs: { tabindex: "0", role: "region", "aria-label": "pipeline configuration" } }, JSON.stringify(p.config, null, 2)),
  );
  // Filtered and refused agents are at the top of the page (with the provider's words), once; here the other failures.
  const failures = (p.failures ?? []).filter((f) => f.code !== "CONTENT_FILTERED" && f.code !== "MODEL_REFUSED");
  append(s, h("h3", null, "Branch failures"));
  if (failures.length === 0) append(s, h("p", { class: "muted small" }, (p.failures ?? []).length ? "none besides the filtered or refused agents named at the top" : "none"));
  else append(s, table(["branch", "code", "message"], failures.map((f) => h("tr", null, h("td", null, f.branch), h("td", null, f.code), h("td", null, f.message)))));
  const untrusted = p.untrustedContent ?? [];
  append(s, h("h3", null, "Untrusted content notes"));
  if (untrusted.length === 0) append(s, h("p", { class: "muted small" }, "none"));
  else append(s, h("ul", { class: "small" }, ...untrusted.map((x) => h("li", null, h("b", null, x.source), ": ", x.note))));
  // A FHIR record summarised to the notes budget: what the model did not read, per resource type.
  const fhirNotes = p.fhirNotes;
  if (fhirNotes) {
    const counts = (m: Record<string, number>) => Object.entries(m).map(([type, n]) => `${type} ${n}`).join(", ") || "none";
    append(
      s,
      h("h3", null, "FHIR record summary"),
      kv([
        ["notes", `${fhirNotes.chars} of ${fhirNotes.budget} characters (MEDMMV_FHIR_NOTES_BUDGET)`],
        ["summarised into trends and counts", counts(fhirNotes.summarised)],
        ["left out (over the budget)", h("span", { attrs: { "data-testid": "fhir-left-out" } }, counts(fhirNotes.leftOut))],
        ["duplicate notes dropped", counts(fhirNotes.duplicates)],
      ]),
    );
  }
  const ignored = p.ignoredResources ?? [];
  if (ignored.length) append(s, h("h3", null, "FHIR resources not read"), h("ul", { class: "small" }, ...ignored.map((x) => h("li", null, h("b", null, x.resource), ": ", x.reason))));
  return s;
}

export function renderCase(payload: ViewPayload): HTMLElement {
  const s = section("Case", { id: "case", wide: true });
  const c = payload.caseInput;
  if (!c) {
    append(s, h("p", { class: "muted" }, "The case input is not part of this view."));
    return s;
  }
  append(s, h("h3", null, "Question"), h("p", { attrs: { "data-testid": "question" } }, c.question));
  if (c.options && Object.keys(c.options).length) {
    append(s, h("h3", null, "Options"), h("ul", null, ...Object.entries(c.options).map(([k, v]) => h("li", null, h("b", null, `(${k}) `), v))));
  }
  append(s, h("h3", null, "Notes"), c.notes ? h("pre", { class: "notes", attrs: { "data-testid": "notes", tabindex: "0", role: "region", "aria-label": "case notes" } }, c.notes) : h("p", { class: "muted" }, "none"));
  if (c.images.length) {
    const box = h("div", { class: "case-images grid2" });
    const regions = wsiRegionsByOverview(c.images);
    // An image no agent read says so beside it (ImageDoctor filtered, refused or failed).
    const unread = payload.summary.notExamined.find((n) => n.what === "the image");
    for (const im of c.images) {
      const img = dataImage(im.dataUri, im.caption ?? im.id);
      const drawn = img && regions.has(im.id) ? withRegionBoxes(img, regions.get(im.id)!) : img;
      const figure = h("figure", null);
      append(
        figure,
        drawn ? zoomable(figure, drawn, im.caption ?? im.id) : h("p", { class: "muted small" }, "not embedded"),
        h("figcaption", { class: "small" }, h("span", { class: "chip" }, im.id), im.caption ? ` ${im.caption}` : ""),
        unread ? h("p", { class: "small warn", attrs: { "data-testid": "image-not-examined" } }, `Not examined: ${unread.agent} did not read this image (${unread.why}).`) : null,
        ...(im.dicom ? [dicomProvenance(im.dicom)] : []),
      );
      append(box, figure);
    }
    append(s, h("h3", null, "Images"), box);
  }
  return s;
}

/** The image as a button that enlarges it to the page's width and back (Escape too). */
function zoomable(figure: HTMLElement, drawn: HTMLElement, name: string): HTMLElement {
  const b = h("button", { class: "zoom", attrs: { type: "button", "aria-pressed": "false", "aria-label": `enlarge ${name}` } }, drawn);
  const set = (on: boolean) => {
    figure.classList.toggle("zoomed", on);
    b.setAttribute("aria-pressed", String(on));
    b.setAttribute("aria-label", `${on ? "shrink" : "enlarge"} ${name}`);
  };
  b.addEventListener("click", () => set(!figure.classList.contains("zoomed")));
  b.addEventListener("keydown", (e) => {
    if (e.key === "Escape") set(false);
  });
  return b;
}

type WsiRegion = NonNullable<ViewDicomProvenance["wsi"]> & { imageId: string };

/** The regions of whole slides sent at a finer level, by the id of the overview they were chosen on. */
function wsiRegionsByOverview(images: ReadonlyArray<{ id: string; dicom?: ViewDicomProvenance }>): Map<string, WsiRegion[]> {
  const out = new Map<string, WsiRegion[]>();
  for (const im of images) {
    const w = im.dicom?.wsi;
    if (w?.role === "region") out.set(w.overviewId, [...(out.get(w.overviewId) ?? []), { ...w, imageId: im.id }]);
  }
  return out;
}

/** The overview with a numbered box over each region sent at a finer level (positions through the CSSOM: the CSP forbids style attributes). */
function withRegionBoxes(img: HTMLImageElement, regions: readonly WsiRegion[]): HTMLElement {
  const wrap = h("div", { class: "wsi-overview" }, img);
  for (const [k, r] of regions.entries()) {
    const box = h("div", { class: "wsi-region", title: `${r.imageId}: x ${r.region.x}, y ${r.region.y}, ${r.region.width}×${r.region.height} at level ${r.level}`, attrs: { "data-testid": "wsi-region" } }, String(k + 1));
    box.style.left = `${(r.overviewRegion.x / r.overviewWidth) * 100}%`;
    box.style.top = `${(r.overviewRegion.y / r.overviewHeight) * 100}%`;
    box.style.width = `${(r.overviewRegion.width / r.overviewWidth) * 100}%`;
    box.style.height = `${(r.overviewRegion.height / r.overviewHeight) * 100}%`;
    append(wrap, box);
  }
  return wrap;
}

/** Where a whole-slide picture comes from: its level and spacing, the region, the tiles read, the optics. */
function wsiRows(w: NonNullable<ViewDicomProvenance["wsi"]>): Array<[string, string]> {
  return [
    ["Whole-slide", `${w.role}, level ${w.level} of ${w.levels} (0 = full resolution), ${w.totalColumns}×${w.totalRows}`],
    ["Pixel spacing", w.pixelSpacingMm ? `${w.pixelSpacingMm[0]} × ${w.pixelSpacingMm[1]} mm` : "—"],
    ["Region", `x ${w.region.x}, y ${w.region.y}, ${w.region.width}×${w.region.height}; on the overview x ${w.overviewRegion.x}, y ${w.overviewRegion.y}, ${w.overviewRegion.width}×${w.overviewRegion.height}`],
    ["Tiles read", `${w.tiles} of the level's ${w.levelFrames} frames`],
    ...(w.selection ? [["Chosen by", w.selection] as [string, string]] : []),
    ["ICC profile", w.iccProfile],
    ["Optical path", w.opticalPaths.map((p) => [p.id, p.description, p.illumination].filter(Boolean).join(", ")).join("; ") || "—"],
  ];
}

/** The DICOM origin of a rendering, beside it: UIDs, frame and the window it was drawn with. */
function dicomProvenance(d: ViewDicomProvenance): HTMLElement {
  const rows: Array<[string, string]> = [
    ["SOP Instance UID", d.sopInstanceUid],
    ["Series", d.seriesInstanceUid ?? "—"],
    ["Study", d.studyInstanceUid ?? "—"],
    ...(d.wsi ? wsiRows(d.wsi) : [["Frame", `${d.frame} of ${d.frames}`] as [string, string]]),
    ["Window", d.window ? `C${d.window.center} / W${d.window.width} (${d.window.source})` : "colour, no window"],
    // What the reader forgave in the object (e.g. implicit VR under an explicit-VR syntax).
    ...(d.warnings ?? []).map((w): [string, string] => ["Read with a warning", w]),
  ];
  return h("dl", { class: "small dicom-provenance", attrs: { "data-testid": "dicom-provenance" } }, ...rows.flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)]));
}

/** Who accessed the case, for an auditor: the trail as a table (the auditor page has every row and the exports). */
export function renderTrail(payload: ViewPayload): HTMLElement | null {
  const trail = payload.record?.trail;
  if (!trail) return null;
  const s = section("Access trail", { id: "trail", wide: true });
  append(
    s,
    h("p", { class: "small muted" }, "Who accessed this case, oldest first (the first 100; the auditor pages have every access and the exports)."),
    table(["when", "who", "what", "from", "outcome"], trail.map((r) => h("tr", null, h("td", null, r.at), h("td", null, r.who), h("td", null, r.what), h("td", null, r.from || "\u2014"), h("td", null, r.outcome))), { "data-testid": "view-trail" }),
  );
  return s;
}

/** The conversation on the case, turn by turn, each with its pathway label and conflict flag. */
export function renderTurns(payload: ViewPayload): HTMLElement | null {
  const turns = payload.turns ?? [];
  if (turns.length === 0) return null;
  const s = section("Conversation", { id: "turns", wide: true });
  append(
    s,
    table(
      ["turn", "question", "answer", "step", "category", "conflict", "evidence"],
      turns.map((t) =>
        h(
          "tr",
          { attrs: { "data-testid": `turn-${t.turn}` } },
          h("td", { class: "num" }, t.turn),
          h("td", null, t.question),
          h("td", null, t.answer),
          h("td", null, t.step ?? "\u2014"),
          h("td", null, t.category ?? "\u2014"),
          h("td", null, t.contextConflict ? h("span", { class: "bad" }, "context conflict") : "no"),
          h("td", null, t.evidence.map((e) => e.label).join("; ")),
        ),
      ),
    ),
  );
  return s;
}
