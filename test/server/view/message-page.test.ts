import { describe, expect, it } from "vitest";
import { newViewNonce, renderLiveViewHtml, renderViewMessageHtml } from "../../../src/server/view/render-view.js";

describe("the audit view's other pages", () => {
  it("a message page escapes its text and runs no script", () => {
    const html = renderViewMessageHtml({ title: "Case <not> found", message: 'case "<img src=x onerror=alert(1)>" & more', nonce: newViewNonce() });
    expect(html).not.toContain("<img");
    expect(html).toContain("case &#34;&#60;img src=x onerror=alert(1)&#62;&#34; &#38; more");
    expect(html).not.toContain("<script");
    expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="[^"]*script-src 'none'/);
  });

  it("the live page carries its data as inert JSON and a policy that connects to its own origin only", () => {
    const html = renderLiveViewHtml({ version: 1, caseId: "c-1", status: "running", eventsUrl: "/cases/c-1/view/events?token=</script><script>alert(1)</script>", payloadUrl: "/cases/c-1/view/payload?token=t" }, newViewNonce());
    expect(html).not.toContain("</script><script>alert(1)");
    expect(html).toMatch(/connect-src 'self'/);
    expect(html).not.toMatch(/connect-src [^;"]*(https?:|\*)/);
  });

  it("refuses a nonce that is not one", () => {
    expect(() => renderViewMessageHtml({ title: "x", message: "y", nonce: '"><script>' })).toThrow(/nonce/);
  });
});
