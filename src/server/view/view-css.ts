/**
 * The page's stylesheet, inlined in a <style> element allowed by its CSP hash. Colours that
 * carry meaning (agents, relations, verdicts) are repeated in client/palette.ts for the graph;
 * the legend is drawn from that file, so the two can only disagree here, in the CSS classes.
 */
export const VIEW_CSS = `
:root {
  --bg: #f6f7f9; --panel: #ffffff; --ink: #1f2933; --muted: #5f6b7a; --line: #dde2e8;
  --accent: #1d4ed8; --ok: #15803d; --bad: #b91c1c; --warn: #b45309; --hl: #fde68a;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--ink); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
header.top { padding: 14px 20px; background: #0f172a; color: #f8fafc; display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: baseline; }
header.top h1 { font-size: 17px; margin: 0; font-weight: 600; }
header.top .answer { font-size: 15px; }
header.top .meta { color: #cbd5e1; font-size: 12px; }
.scripted-banner { background: #fde047; color: #422006; border-bottom: 2px solid #ca8a04; padding: 8px 20px; font-size: 13px; }
.disclaimer { background: #fff7ed; color: #7c2d12; border-bottom: 1px solid #fed7aa; padding: 6px 20px; font-size: 12px; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 11px; font-weight: 600; background: #e2e8f0; color: #1e293b; vertical-align: 1px; }
.badge.completed, .badge.supported { background: #dcfce7; color: #14532d; }
.badge.abstained, .badge.unsupported { background: #fef3c7; color: #78350f; }
.badge.failed, .badge.contradicted, .badge.retracted { background: #fee2e2; color: #7f1d1d; }
.badge.stage { background: #e0e7ff; color: #312e81; }
main { display: grid; grid-template-columns: minmax(0, 1fr) 420px; gap: 14px; padding: 14px 20px 40px; }
main > .wide { grid-column: 1 / -1; }
section.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; min-width: 0; }
section.panel > h2 { font-size: 14px; margin: 0 0 8px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
h3 { font-size: 13px; margin: 12px 0 6px; }
.toolbar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-bottom: 8px; }
.toolbar input[type=search] { flex: 1 1 180px; min-width: 120px; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; font: inherit; }
button { font: inherit; font-size: 12px; padding: 4px 9px; border: 1px solid #cbd5e1; background: #f8fafc; border-radius: 6px; cursor: pointer; color: var(--ink); }
button:hover { background: #eef2f7; }
button[aria-pressed=true] { background: var(--accent); color: #fff; border-color: var(--accent); }
.counts { color: var(--muted); font-size: 12px; margin-left: auto; }
.graph-wrap { position: relative; }
#graph { height: 560px; border: 1px solid var(--line); border-radius: 6px; background: #fcfcfd; }
.graph-error { padding: 24px; color: var(--bad); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; color: var(--muted); margin-top: 8px; }
.legend .group { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.legend .title { font-weight: 600; color: var(--ink); }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 50%; vertical-align: -1px; margin-right: 3px; }
.swatch.line { width: 18px; height: 3px; border-radius: 2px; vertical-align: 3px; }
.shape { display: inline-block; color: #64748b; width: 14px; text-align: center; }
.matches { display: flex; flex-wrap: wrap; gap: 4px; margin: 0 0 6px; }
.matches:empty { display: none; }
.side { display: flex; flex-direction: column; gap: 14px; min-width: 0; }
.step { border-left: 3px solid #cbd5e1; padding: 2px 0 6px 10px; margin-bottom: 8px; }
.step .text { margin: 2px 0 4px; }
.claim { display: block; width: 100%; text-align: left; margin: 4px 0; padding: 6px 8px; border-radius: 6px; border: 1px solid var(--line); border-left-width: 5px; background: #fff; }
.claim.supported { border-left-color: #16a34a; }
.claim.contradicted { border-left-color: #dc2626; background: #fff5f5; }
.claim.unsupported { border-left-color: #d97706; background: #fffbeb; }
.claim.unknown { border-left-color: #94a3b8; }
.claim.active { outline: 2px solid var(--accent); }
.claim .ids { display: block; margin-top: 3px; }
.chip { display: inline-block; font: 11px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f1f5f9; border: 1px solid #e2e8f0; border-radius: 4px; padding: 0 4px; margin: 1px 3px 1px 0; }
.chip.missing { text-decoration: line-through; color: var(--bad); }
button.chip { cursor: pointer; }
.muted { color: var(--muted); }
.small { font-size: 12px; }
pre, .pre { white-space: pre-wrap; word-break: break-word; font: 12px/1.5 ui-monospace, SFMono-Regular, Menlo, monospace; background: #f8fafc; border: 1px solid var(--line); border-radius: 6px; padding: 8px; margin: 4px 0; max-height: 320px; overflow: auto; }
.case-text mark { background: var(--hl); padding: 1px 0; border-radius: 2px; outline: 1px solid #f59e0b; }
.source { border: 1px solid var(--line); border-radius: 6px; padding: 8px; margin: 8px 0; }
.source .agent { font-weight: 600; }
.source img, .case-images img { max-width: 100%; max-height: 260px; border: 1px solid var(--line); border-radius: 4px; background: #000; display: block; margin: 6px 0; image-rendering: auto; }
.wsi-overview { position: relative; display: inline-block; }
.wsi-overview img { margin: 0; }
.wsi-region { position: absolute; box-sizing: border-box; border: 2px solid #ffd400; color: #ffd400; font: bold 11px sans-serif; line-height: 1; padding: 1px; }
.warn { color: var(--warn); }
.bad { color: var(--bad); }
.ok { color: var(--ok); }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 6px; text-align: left; vertical-align: top; }
th { color: var(--muted); font-weight: 600; background: #f8fafc; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.selected td { background: #eff6ff; font-weight: 600; }
details { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; margin: 6px 0; }
details > summary { cursor: pointer; font-weight: 600; }
.attempt { border-top: 1px dashed var(--line); padding-top: 6px; margin-top: 6px; }
.diff .add { background: #dcfce7; color: #14532d; display: block; }
.diff .del { background: #fee2e2; color: #7f1d1d; display: block; }
.diff .same { color: var(--muted); display: block; }
.bars .bar { display: grid; grid-template-columns: 90px 1fr 48px; gap: 8px; align-items: center; margin: 3px 0; }
.bars .track { background: #e2e8f0; border-radius: 3px; height: 12px; overflow: hidden; }
.bars .fill { background: var(--accent); height: 100%; }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; font-size: 12.5px; }
.kv dt { color: var(--muted); }
.kv dd { margin: 0; word-break: break-word; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(380px, 100%), 1fr)); gap: 14px; align-items: start; }
#usage td:first-child { white-space: nowrap; }
.footer { grid-column: 1 / -1; color: var(--muted); font-size: 11px; text-align: center; }
@media (max-width: 1100px) { main { grid-template-columns: 1fr; } }
.explore { display: grid; grid-template-columns: minmax(0, 1fr) 420px; gap: 14px; align-items: start; }
@media (max-width: 1100px) {
  .explore { grid-template-columns: minmax(0, 1fr); }
  /* A claim and the graph it highlights on screen together: the graph stays while the path scrolls under it. */
  .explore > #graph-section { position: sticky; top: 0; z-index: 5; box-shadow: 0 2px 8px rgba(15, 23, 42, .15); }
  .explore #graph { height: 34vh; }
  .explore .side { scroll-margin-top: 60vh; }
  #node-panel { scroll-margin-top: 60vh; }
}
.badge.queued, .badge.running { background: #e0f2fe; color: #0c4a6e; }
ol.progress { margin: 8px 0 0; padding-left: 22px; font-size: 13px; max-height: 70vh; overflow: auto; }
ol.progress li { margin: 2px 0; }
ol.stages { list-style: none; display: flex; flex-wrap: wrap; gap: 4px; padding: 0; margin: 10px 0; counter-reset: stage; }
ol.stages li { counter-increment: stage; flex: 1 1 120px; padding: 6px 8px; border-radius: 6px; background: #e2e8f0; color: #334155; font-size: 12.5px; }
ol.stages li::before { content: counter(stage) ". "; }
ol.stages li.done { background: #dcfce7; color: #14532d; }
ol.stages li.done::after { content: " \\2713"; }
ol.stages li.current { background: #1d4ed8; color: #fff; font-weight: 600; }
.question { font-size: 15px; }
ol.stepper { list-style: none; display: flex; flex-wrap: wrap; gap: 4px; padding: 0; margin: 4px 0; }
ol.stepper li { padding: 3px 8px; border: 1px solid var(--line); border-radius: 12px; background: #f8fafc; }
ol.stepper li + li::before { content: "\\2192  "; color: var(--muted); }
ol.stepper li.off { border-color: #dc2626; background: #fff5f5; color: #7f1d1d; }
p.bad { color: #7f1d1d; font-weight: 600; }
main.message { display: block; max-width: 720px; margin: 48px auto; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 20px 24px; }
main.message h1 { font-size: 20px; margin: 0 0 10px; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
section.summary { border: 1px solid var(--line); border-left: 6px solid #64748b; border-radius: 8px; padding: 10px 14px; background: var(--panel); }
section.summary.state-confident { border-left-color: #15803d; }
section.summary.state-uncertain { border-left-color: #b45309; background: #fffbeb; }
section.summary.state-incomplete { border-left-color: #b91c1c; background: #fff5f5; }
section.summary p { margin: 4px 0; }
section.summary .state-line { font-size: 15px; font-weight: 600; }
section.summary .facts { font-size: 15px; }
.badge.state.confident { background: #dcfce7; color: #14532d; }
.badge.state.uncertain { background: #fef3c7; color: #78350f; }
.badge.state.incomplete { background: #fee2e2; color: #7f1d1d; }
.not-examined { color: #7f1d1d; }
.notation { color: var(--muted); }
.claim-main { display: block; width: 100%; text-align: left; border: 0; background: transparent; padding: 0; font-size: 13px; }
.chip.label { font-family: inherit; font-size: 11.5px; }
button.zoom { display: block; padding: 0; border: 0; background: transparent; cursor: zoom-in; max-width: 100%; }
figure.zoomed { grid-column: 1 / -1; }
figure.zoomed button.zoom { cursor: zoom-out; }
figure.zoomed img { max-height: none; width: 100%; }
figure { margin: 0; min-width: 0; }
.table-scroll { overflow-x: auto; }
main.auditor { display: block; max-width: 1280px; margin: 0 auto; padding: 14px 20px 40px; }
main.auditor h1 { font-size: 20px; margin: 8px 0; }
.auditor-nav { font-size: 14px; margin-bottom: 6px; }
.auditor-nav a[aria-current=page] { font-weight: 700; color: var(--ink); }
form.filters { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(180px, 100%), 1fr)); gap: 8px 12px; align-items: end; background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; margin: 10px 0; }
form.filters .field { display: flex; flex-direction: column; gap: 2px; font-size: 12.5px; min-width: 0; }
form.filters input, form.filters select { font: inherit; padding: 4px 6px; border: 1px solid #94a3b8; border-radius: 5px; min-width: 0; }
form.filters button { font-size: 13px; padding: 5px 12px; background: var(--accent); color: #fff; border-color: var(--accent); }
main.auditor table { background: var(--panel); }
/* Whole words in the auditor tables: a table wider than the screen scrolls in its own box. */
main.auditor th, main.auditor td { word-break: normal; }
main.auditor td:first-child { overflow-wrap: anywhere; min-width: 12em; }
a { color: #1d4ed8; }
@media (max-width: 900px) {
  main { padding: 10px; }
  .grid2 { grid-template-columns: minmax(0, 1fr); }
  #usage td:first-child { white-space: normal; }
  header.top { padding: 10px; }
  table { font-size: 12px; }
  th, td { padding: 4px; word-break: break-word; }
}
@media print {
  header.top { background: none; color: #000; }
  header.top .meta { color: #333; }
  main { display: block; padding: 0; }
  section.panel, section.summary { break-inside: avoid; border-color: #999; margin-bottom: 10px; }
  .toolbar, #graph-section .graph-wrap, .matches { display: none; }
  pre { max-height: none; overflow: visible; }
  details { display: block; }
  a[href]::after { content: ""; }
}
`;
