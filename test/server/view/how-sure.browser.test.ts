/**
 * The audit view's header in Chromium: the state by the shared rule (answer-state.ts) for a
 * confident, an uncertain and an incomplete case, in words; and the page at 820 px (a tablet
 * held upright) scrolls only downwards and has no serious or critical axe-core violation.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderCaseViewHtml } from "../../../src/server/view/render-view.js";
import { useChromium, waitReady, watch } from "../../support/browser.js";
import { scrollsSideways, seriousAxeViolations } from "../../support/axe.js";
import { confidentCase, describedImageCase, incompleteCase, uncertainCase, unseenImageCase } from "./how-sure-cases.js";
import { runScriptedCase, type ScriptedCaseRun } from "./view-fixtures.js";

const browser = useChromium();
let page: Page;
let problems: string[];
let scripted: ScriptedCaseRun;

beforeAll(async () => {
  const context = await browser().newContext({ viewport: { width: 820, height: 1180 } });
  page = await context.newPage();
  problems = watch(page).problems;
  scripted = await runScriptedCase();
}, 120_000);
afterAll(async () => {
  await page?.context().close();
});

async function open(run: ScriptedCaseRun): Promise<void> {
  await page.setContent(renderCaseViewHtml({ ...run, mode: "offline" }));
  await waitReady(page);
}

const text = (sel: string) => page.locator(sel).first().textContent();

describe("how sure, at the top of the page", () => {
  it("a confident case says confident, the runs behind the answer and its supported claims", async () => {
    await open(confidentCase());
    expect(await text("[data-testid=state]")).toBe("confident");
    expect(await text("[data-testid=runs]")).toBe("4 of 5 runs");
    expect(await text("[data-testid=claims]")).toBe("2 supported, 0 unsupported, 0 rejected claims");
    expect(await page.locator("[data-testid=not-examined]").count()).toBe(0);
  });

  it("five different answers and an unsupported claim: uncertain, 1 of 5 runs, the unsupported count", async () => {
    await open(uncertainCase());
    expect(await text("[data-testid=state]")).toBe("uncertain");
    expect(await text("[data-testid=runs]")).toBe("1 of 5 runs");
    expect(await text("[data-testid=claims]")).toBe("1 supported, 1 unsupported, 0 rejected claims");
    const why = await text("[data-testid=state-text]");
    expect(why).toMatch(/^uncertain: only 1 of 5 runs chose this answer/);
    expect(why).toContain("1 claim of the selected path is not supported by the evidence");
    // The paper's notation stays, below the words.
    expect(await text(".summary .notation")).toMatch(/answer support 0\.26/);
  });

  it("ImageDoctor filtered: incomplete, the image was not examined, said at the top once and beside the image", async () => {
    await open(incompleteCase());
    expect(await text("[data-testid=state]")).toBe("incomplete");
    expect(await text("[data-testid=state-text]")).toBe("incomplete: the image was not examined (content filter)");
    expect(await text("[data-testid=not-examined]")).toContain("the image (image-doctor: content filter)");
    expect(await page.locator("text=content management policy").count()).toBe(1);
    expect(await text("[data-testid=image-not-examined]")).toBe("Not examined: image-doctor did not read this image (content filter).");
    // The summary comes before the case, and the case before the graph.
    const order = await page.evaluate(() => ["[data-testid=summary]", "#case", "#graph-section"].map((s) => document.querySelector(s)!.getBoundingClientRect().top));
    expect(order[0]).toBeLessThan(order[1]!);
    expect(order[1]).toBeLessThan(order[2]!);
  });

  it("a text-only answering model that saw the vision model's description: confident, the header says it saw a description, no image unread", async () => {
    await open(describedImageCase());
    expect(await text("[data-testid=state]")).toBe("confident");
    expect(await text("[data-testid=state-text]")).toContain("the images as another model's description");
    expect(await text("[data-testid=image-note]")).toBe("Images: the answer's model (deepseek-chat) saw a description of the images made by gpt-4o, not the images");
    expect(await page.locator("[data-testid=image-not-examined]").count()).toBe(0);
  });

  it("no model takes images: incomplete, the image was not examined, said at the top and beside the image", async () => {
    await open(unseenImageCase());
    expect(await text("[data-testid=state]")).toBe("incomplete");
    expect(await text("[data-testid=state-text]")).toBe("incomplete: the image was not examined (no model of this deployment takes images)");
    expect(await text("[data-testid=image-not-examined]")).toBe("Not examined: image-doctor did not read this image (no model of this deployment takes images).");
  });
});

describe("a real run", () => {
  it("whose ImageDoctor reply Azure's content filter stopped says at the top that the image was not examined", async () => {
    const run = await runScriptedCase({ imageReplyFiltered: true });
    expect(run.result.provenance.failures).toContainEqual(expect.objectContaining({ branch: "image-doctor", code: "CONTENT_FILTERED" }));
    await open(run);
    expect(await text("[data-testid=state]")).toBe("incomplete");
    expect(await text("[data-testid=state-text]")).toMatch(/^incomplete: the image was not examined \(content filter\)/);
    expect(await text("[data-testid=image-not-examined]")).toBe("Not examined: image-doctor did not read this image (content filter).");
  }, 60_000);
});

describe("at 820 px, for everyone", () => {
  it("a real case's page fits the width and has no serious or critical axe-core violation", async () => {
    await open(scripted);
    expect(await scrollsSideways(page)).toBeNull();
    expect(await seriousAxeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });

  it("a claim clicked far down a long path and the graph it highlights are on screen together", async () => {
    const long = confidentCase();
    const path = long.result.path!;
    const evidence = path.steps[0]!.claims[0]!.evidence;
    for (let i = 0; i < 8; i++) path.steps.push({ text: `Further step ${i}`, stage: "reasoning", claims: [1, 2, 3].map((j) => ({ text: `claim ${i}.${j} of a long path`, verdict: "supported" as const, evidence })) });
    await open(long);
    const last = page.locator("#path-panel [data-claim]").last();
    await last.evaluate((el) => el.scrollIntoView({ block: "end" }));
    await last.locator(".claim-main").click();
    const onScreen = (sel: string) =>
      page.evaluate((s) => {
        const r = document.querySelector(s)!.getBoundingClientRect();
        return r.top < window.innerHeight && r.bottom > 0 && r.height > 0;
      }, sel);
    expect(await onScreen("#path-panel [data-claim].active")).toBe(true);
    expect(await onScreen("#graph")).toBe(true);
  });

  it("an evidence id is shown by its label, with the id in its tooltip, and brings its provenance into view", async () => {
    await open(scripted);
    const claim = scripted.result.path!.steps.flatMap((s) => s.claims).find((c) => c.evidence.length > 0)!;
    const id = claim.evidence[0]!;
    const chip = page.locator(`#path-panel [data-node="${id}"]`).first();
    expect(await chip.getAttribute("title")).toBe(`${id}: show provenance`);
    expect(await chip.textContent()).not.toBe(id);
    await page.evaluate(() => window.scrollTo(0, 0));
    await chip.click();
    await page.waitForFunction(() => {
      const r = document.querySelector("[data-testid=node-panel]")!.getBoundingClientRect();
      return r.top < window.innerHeight && r.bottom > 0;
    });
  });
});
