import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";
import { clientBundle } from "../../../src/server/view/build-client.js";
import { buildViewPayload, jsonForHtml, newViewNonce, renderCaseViewHtml, viewContentSecurityPolicy } from "../../../src/server/view/render-view.js";
import { caseViewInputFromStored, reportInputFromJson, writeOfflineReport } from "../../../src/server/view/report-command.js";
import { VIEW_CSS } from "../../../src/server/view/view-css.js";
import type { ViewPayload } from "../../../src/server/view/view-payload.js";
import { useTempDir } from "../../eval/datasets/dataset-kit.js";
import { makePng, syntheticCase } from "./view-fixtures.js";

const HOSTILE = `</script><script>window.__pwned=1</script><!-- \u2028\u2029 & "><img src=x onerror=window.__pwned=1>`;

function embeddedJson(html: string): string {
  const m = /<script id="medmmv-data" type="application\/json">([\s\S]*?)<\/script>/.exec(html);
  if (!m) throw new Error("no data block");
  return m[1]!;
}

function sha(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("base64");
}

const tmp = useTempDir("medmmv-view-");

describe("jsonForHtml", () => {
  it("leaves nothing that can end a script element or open a comment, and round-trips", () => {
    const value = { a: HOSTILE, nested: [HOSTILE, { k: "<>&" }] };
    const out = jsonForHtml(value);
    expect(out).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(out)).toEqual(value);
  });
});

describe("renderCaseViewHtml", () => {
  const fixture = syntheticCase(20);

  it("embeds the data as inert JSON that parses back to the payload", () => {
    const hostile = structuredClone(fixture);
    hostile.caseInput.notes = `${hostile.caseInput.notes} ${HOSTILE}`;
    hostile.result.path!.steps[0]!.claims[0]!.text = HOSTILE;
    const html = renderCaseViewHtml({ ...hostile, mode: "offline", now: () => new Date("2026-02-03T04:05:06.000Z") });
    const raw = embeddedJson(html);
    expect(raw).not.toMatch(/[<>\u2028\u2029]/);
    const payload = JSON.parse(raw) as ViewPayload;
    expect(payload.mode).toBe("offline");
    expect(payload.generatedAt).toBe("2026-02-03T04:05:06.000Z");
    expect(payload.result.path!.steps[0]!.claims[0]!.text).toBe(HOSTILE);
    expect(payload.caseInput!.notes!.endsWith(HOSTILE)).toBe(true);
    // Only the two script elements the renderer wrote: the data block and the bundle.
    expect(html.match(/<script\b/gi)).toHaveLength(2);
    expect(html.match(/<\/script>/gi)).toHaveLength(2);
  });

  it("draws the full graph, marks E_p, and gives spans the text they index into", () => {
    const payload = buildViewPayload({ ...fixture, mode: "served" });
    const full = EvidenceGraph.import(fixture.fullEvidenceGraph);
    expect(payload.graphIsFull).toBe(true);
    expect(payload.graph.nodes.map((n) => n.key)).toEqual(full.nodes().map((n) => n.id));
    expect(payload.graph.edges).toHaveLength(full.size);
    const sub = EvidenceGraph.import(fixture.result.evidenceGraph);
    expect(payload.subgraphNodeIds).toEqual(sub.nodes().map((n) => n.id));
    expect(payload.caseInput!.sourceText).toBe(`${fixture.caseInput.notes}\n\n${fixture.caseInput.question}`);
    const quoted = full.nodes().find((n) => n.source.span)!;
    const [s, e] = quoted.source.span!;
    expect(payload.caseInput!.sourceText.slice(s, e)).toBe(quoted.source.quote);
  });

  it("falls back to E_p when no full graph is stored", () => {
    const payload = buildViewPayload({ ...fixture, fullEvidenceGraph: null, mode: "served" });
    expect(payload.graphIsFull).toBe(false);
    expect(payload.graph.nodes.map((n) => n.key)).toEqual(payload.subgraphNodeIds);
  });

  it("embeds only well-formed images of a drawable type", () => {
    const png = makePng(8, 8).toString("base64");
    const payload = buildViewPayload({
      ...fixture,
      mode: "offline",
      caseInput: {
        question: "q",
        images: [
          { id: "ok", mimeType: "image/png", data: png },
          { id: "svg", mimeType: "image/svg+xml", data: png },
          { id: "junk", mimeType: "image/png", data: "not base64 at all!" },
          { id: "ref", mimeType: "image/png" },
        ],
      },
    });
    const byId = new Map(payload.caseInput!.images.map((i) => [i.id, i]));
    expect(byId.get("ok")!.dataUri).toBe(`data:image/png;base64,${png}`);
    expect(byId.get("svg")!.dataUri).toBeUndefined();
    expect(byId.get("junk")!.dataUri).toBeUndefined();
    expect(byId.get("ref")!.dataUri).toBeUndefined();
  });

  it("carries a strict CSP whose hashes match the inline script and style", () => {
    const html = renderCaseViewHtml({ ...fixture, mode: "offline" });
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)![1]!;
    const script = /<script>([\s\S]*)<\/script>\n<\/body>/.exec(html)![1]!;
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    expect(script).toBe(clientBundle().code);
    expect(style).toBe(VIEW_CSS);
    expect(csp).toContain(`script-src 'sha256-${sha(script)}'`);
    expect(csp).toContain(`style-src 'sha256-${sha(style)}'`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("img-src data:");
    expect(csp).not.toMatch(/https?:|\*|unsafe-inline|unsafe-eval/);
    expect(html).not.toMatch(/<(script|link|img|iframe)[^>]+(src|href)=/i);
  });

  it("adds the nonce to the policy and the inline elements, and refuses a malformed one", () => {
    const nonce = newViewNonce();
    const html = renderCaseViewHtml({ ...fixture, mode: "served", nonce });
    expect(html).toContain(`<script nonce="${nonce}">`);
    expect(html).toContain(`<style nonce="${nonce}">`);
    expect(viewContentSecurityPolicy(nonce)).toContain(`'nonce-${nonce}'`);
    expect(html).toContain(viewContentSecurityPolicy(nonce));
    expect(() => renderCaseViewHtml({ ...fixture, mode: "served", nonce: `x" onload="alert(1)` })).toThrow(/nonce/);
  });

  it("refuses a result or graph that does not match the contracts", () => {
    const bad = { ...fixture.result, candidates: "nope" } as unknown as DiagnosisResult;
    expect(() => renderCaseViewHtml({ ...fixture, result: bad, mode: "offline" })).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
    expect(() => renderCaseViewHtml({ ...fixture, fullEvidenceGraph: { nodes: [{ key: "x" }] }, mode: "offline" })).toThrow(
      expect.objectContaining({ code: "INVALID_INPUT" }),
    );
  });
});

describe("report command", () => {
  const fixture = syntheticCase(12);

  it("writes one self-contained file", async () => {
    const out = path.join(tmp(), "nested", "report.html");
    const { file, bytes } = await writeOfflineReport(fixture, out);
    expect(file).toBe(out);
    const html = await readFile(out, "utf8");
    expect(Buffer.byteLength(html)).toBe(bytes);
    const payload = JSON.parse(embeddedJson(html)) as ViewPayload;
    expect(payload.mode).toBe("offline");
    expect(payload.result.caseId).toBe(fixture.result.caseId);
    expect(payload.caseInput!.images[0]!.dataUri).toMatch(/^data:image\/png;base64,/);
  });

  it("reads a bare result, a {result, …} bundle and a stored record", () => {
    const bare = reportInputFromJson(JSON.parse(JSON.stringify(fixture.result)));
    expect(bare.caseInput).toBeNull();
    expect(bare.fullEvidenceGraph).toBeNull();
    expect(bare.result.caseId).toBe(fixture.result.caseId);
    // `diagnose --out`: the result's fields with the full graph beside them.
    const written = reportInputFromJson(JSON.parse(JSON.stringify({ ...fixture.result, fullEvidenceGraph: fixture.fullEvidenceGraph })));
    expect(written.fullEvidenceGraph).toEqual(fixture.fullEvidenceGraph);
    expect(written.result).not.toHaveProperty("fullEvidenceGraph");

    const bundle = reportInputFromJson(JSON.parse(JSON.stringify(fixture)));
    expect(bundle.caseInput!.notes).toBe(fixture.caseInput.notes);
    expect(bundle.fullEvidenceGraph).toEqual(fixture.fullEvidenceGraph);

    const record = reportInputFromJson({ result: fixture.result, fullEvidenceGraph: null, input: { id: "x", question: "Q?", images: [] } });
    expect(record.caseInput).toEqual({ question: "Q?", images: [] });

    expect(() => reportInputFromJson([1, 2])).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
    expect(() => reportInputFromJson({ hello: 1 })).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
  });

  it("rebuilds the case from a stored record and its images, keeping only matching bytes", () => {
    const data = makePng(4, 4).toString("base64");
    const view = caseViewInputFromStored(
      {
        id: "c1",
        question: "Q?",
        notes: "N",
        images: [
          { id: "a", sha256: "aaa", mimeType: "image/png", caption: "first" },
          { id: "b", sha256: "bbb", mimeType: "image/png" },
          { id: "c", sha256: "ccc", mimeType: "image/png" },
        ],
      },
      [{ id: "a", sha256: "aaa", mimeType: "image/png", data }, null, { id: "c", sha256: "zzz", mimeType: "image/png", data }],
    );
    expect(view.images).toEqual([
      { id: "a", mimeType: "image/png", data, caption: "first" },
      { id: "b", mimeType: "image/png" },
      { id: "c", mimeType: "image/png" },
    ]);
    expect(view.notes).toBe("N");
  });
});
