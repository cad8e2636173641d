/**
 * The browser tests' Chromium: playwright-core driving Debian's /usr/bin/chromium (.ci/run
 * installs it), launched one way for every test file, and the waits and watches they share.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

export const CHROMIUM = "/usr/bin/chromium";

/** No sandbox (it will not start as root, which CI containers run as), no GPU, and nothing Chromium would fetch or sync by itself. */
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

/**
 * One Chromium for this test file: launched before the file's tests (before the hooks
 * registered after this call) and closed after them. Call the result for the browser.
 */
export function useChromium(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`browser tests need Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error("useChromium: the browser is launched in beforeAll; ask for it inside a hook or test");
    return browser;
  };
}

/** Waits until the audit view says it is drawn (window.__medmmvView.ready). */
export async function waitReady(page: Page): Promise<void> {
  await page.waitForFunction(() => (window as unknown as { __medmmvView?: { ready?: boolean } }).__medmmvView?.ready === true, null, { timeout: 30_000 });
}

/** Opens `url` and waits until the audit view on it is drawn. */
export async function openReady(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await waitReady(page);
}

/**
 * What went wrong on a page, gathered so a test can insist on none: page errors, console
 * errors (CSP violations among them) and dialogs; and every URL it requested. Pass
 * `problems` to gather several pages' problems in one list.
 */
export function watch(page: Page, problems: string[] = []): { problems: string[]; requests: string[] } {
  const requests: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("dialog", (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  page.on("request", (r) => requests.push(r.url()));
  return { problems, requests };
}
