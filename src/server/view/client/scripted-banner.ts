import type { ViewPayload } from "../view-payload.js";
import { h } from "./dom.js";

/**
 * Model names that say the answers were scripted rather than generated: the demo's
 * scripted server (src/cli/demo/demo-backends.ts) and the test servers are named `scripted…`.
 * Read from the result's own provenance, so the banner travels with the case wherever its
 * page is rendered (served, offline report), and no page-level flag can drop it.
 */
const SCRIPTED = /^scripted\b/i;

export function scriptedModels(models: Record<string, string>, rolloutModels: readonly string[] = []): string[] {
  // A mixed panel's rollout models count too: one scripted rollout makes the page a demo.
  return [...new Set([...Object.values(models), ...rolloutModels].filter((m) => SCRIPTED.test(m)))];
}

/** The "scripted model — demo" banner, or null for a result from a real model. */
export function renderScriptedBanner(r: ViewPayload["result"]): HTMLElement | null {
  const names = scriptedModels(r.provenance.models, r.provenance.rolloutModels);
  if (names.length === 0) return null;
  return h(
    "div",
    { class: "scripted-banner", attrs: { role: "note", "data-testid": "scripted-banner" } },
    h("b", null, "Scripted model \u2014 demo."),
    ` The model answers on this page were written in advance for this case and served by a local test server (${names.join(", ")}); the pipeline around them is real. Not clinical output.`,
  );
}
