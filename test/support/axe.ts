/**
 * axe-core (Deque's accessibility engine) run in a page the browser tests drive: its source
 * is evaluated in the page (through the DevTools protocol, so the page's CSP, which allows no
 * script but its own, is not loosened), then axe.run checks the document against WCAG 2.x A/AA.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** The page's serious and critical violations (WCAG 2.x A and AA), each with the selectors of the elements at fault. */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }> }> } }).axe;
    const out = await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] }, resultTypes: ["violations"] });
    return out.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.map(String).join(" ")) }));
  });
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** Whether the page scrolls sideways at its current viewport (a layout that does not fit). */
export async function scrollsSideways(page: Page): Promise<{ scrollWidth: number; clientWidth: number } | null> {
  const m = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth }));
  return m.scrollWidth > m.clientWidth ? m : null;
}
