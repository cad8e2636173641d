import { describe, expect, it } from "vitest";
import type { AccessEvent } from "../../../src/server/store/case-store.js";
import { trailCsv, trailRow } from "../../../src/server/view/trail-words.js";

const event = (over: Partial<AccessEvent>): AccessEvent => ({
  tenant: "clinic",
  seq: 1,
  at: "2026-12-06T10:00:00.000Z",
  actor: { type: "key", id: "qa-1" },
  action: "read",
  caseId: "case-1",
  outcome: "success",
  client: "10.0.0.7",
  requestId: "r-1",
  detail: {},
  prevHash: "",
  hash: "h",
  signature: null,
  ...over,
});

describe("the trail in an auditor's words", () => {
  it("names who, what and the outcome; a search with its filters, feedback with its reason", () => {
    expect(trailRow(event({}))).toEqual({ at: "2026-12-06T10:00:00.000Z", who: "key qa-1", what: "read the case", caseId: "case-1", from: "10.0.0.7", outcome: "success", requestId: "r-1" });
    expect(trailRow(event({ actor: { type: "ehr", id: "https://ehr.example.org", sub: "Practitioner/1" }, action: "feedback", detail: { outcome: "overridden", reason: "Not relevant to this patient now" } }))).toMatchObject({
      who: "EHR https://ehr.example.org user Practitioner/1",
      what: "sent CDS card feedback: overridden: Not relevant to this patient now",
    });
    expect(trailRow(event({ actor: { type: "link", id: "l-0123", sub: "dr-a" }, action: "search", caseId: null, detail: { filters: "from=2026-12-01", results: 2 } }))).toMatchObject({
      who: "view link l-0123 (made by dr-a)",
      what: "searched cases (from=2026-12-01), 2 found",
      caseId: "",
    });
    expect(trailRow(event({ outcome: "denied", detail: { status: 404 } })).outcome).toBe("denied (HTTP 404)");
  });

  it("writes RFC 4180 CSV that a spreadsheet will not run as formulas", () => {
    const csv = trailCsv([trailRow(event({ requestId: '=HYPERLINK("http://x","y")', client: "+1", caseId: 'a,"b"' }))]);
    const [header, row] = csv.split("\r\n");
    expect(header).toBe("when,who,what,case,from,outcome,request id");
    expect(row).toBe(`2026-12-06T10:00:00.000Z,key qa-1,read the case,"a,""b""",'+1,success,"'=HYPERLINK(""http://x"",""y"")"`);
    expect(csv.endsWith("\r\n")).toBe(true);
  });
});
