import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { signViewLink, verifyViewLink } from "../../../src/server/view/signed-link.js";

const SECRET = "0123456789abcdef0123456789abcdef";
const NOW = Date.UTC(2026, 0, 1);

function flip(s: string, i: number): string {
  const c = s[i] === "A" ? "B" : "A";
  return s.slice(0, i) + c + s.slice(i + 1);
}

describe("signed view links", () => {
  it("round-trips case id and owner until expiry", () => {
    const token = signViewLink({ caseId: "case-1", owner: "owner-hash", keyId: "k-1" }, SECRET, 300, NOW);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(verifyViewLink(token, SECRET, NOW)).toEqual({ caseId: "case-1", owner: "owner-hash", keyId: "k-1", expiresAt: NOW / 1000 + 300 });
    expect(verifyViewLink(token, SECRET, NOW + 299_999)).not.toBeNull();
    expect(verifyViewLink(token, SECRET, NOW + 300_000)).toBeNull();
  });

  it("rejects another secret, a changed payload or signature, and junk", () => {
    const token = signViewLink({ caseId: "case-1", owner: "owner-hash", keyId: "k-1" }, SECRET, 300, NOW);
    const [payload, sig] = token.split(".") as [string, string];
    expect(verifyViewLink(token, `${SECRET}x`, NOW)).toBeNull();
    expect(verifyViewLink(`${flip(payload, 3)}.${sig}`, SECRET, NOW)).toBeNull();
    expect(verifyViewLink(`${payload}.${flip(sig, 5)}`, SECRET, NOW)).toBeNull();
    // A payload naming another case, re-encoded, does not carry the old signature over.
    const forged = Buffer.from(JSON.stringify({ c: "case-2", o: "owner-hash", k: "k-1", e: NOW / 1000 + 300 })).toString("base64url");
    expect(verifyViewLink(`${forged}.${sig}`, SECRET, NOW)).toBeNull();
    for (const junk of ["", ".", "a.b.c", `${payload}.`, `.${sig}`, `${payload}.${sig}=`, "x".repeat(5000), 42, null, undefined]) {
      expect(verifyViewLink(junk, SECRET, NOW)).toBeNull();
    }
  });

  it("rejects a truncated or padded signature (one spelling per token)", () => {
    const token = signViewLink({ caseId: "case-1", owner: "o", keyId: "k-1" }, SECRET, 60, NOW);
    expect(verifyViewLink(token.slice(0, -1), SECRET, NOW)).toBeNull();
    expect(verifyViewLink(`${token}A`, SECRET, NOW)).toBeNull();
  });

  it("a token without a key id (the v1 shape) does not verify", () => {
    const v1 = Buffer.from(JSON.stringify({ c: "case-1", o: "owner-hash", e: NOW / 1000 + 300 })).toString("base64url");
    const mac = createHmac("sha256", SECRET).update("medmmv:view-link:v1:").update(v1).digest("base64url");
    expect(verifyViewLink(`${v1}.${mac}`, SECRET, NOW)).toBeNull();
  });

  it("binds the owner and keeps odd case ids intact", () => {
    const id = "case:ä/\"<x>'.1";
    const a = signViewLink({ caseId: id, owner: "owner-a", keyId: "k-1" }, SECRET, 60, NOW);
    expect(verifyViewLink(a, SECRET, NOW)?.caseId).toBe(id);
    expect(verifyViewLink(a, SECRET, NOW)?.owner).toBe("owner-a");
    expect(a).not.toBe(signViewLink({ caseId: id, owner: "owner-b", keyId: "k-1" }, SECRET, 60, NOW));
  });

  it("refuses weak secrets and bad ttl or ids", () => {
    expect(() => signViewLink({ caseId: "c", owner: "o", keyId: "k-1" }, "short", 60, NOW)).toThrow(expect.objectContaining({ code: "CONFIG_INVALID" }));
    expect(() => verifyViewLink("a.b", "short", NOW)).toThrow(expect.objectContaining({ code: "CONFIG_INVALID" }));
    for (const ttl of [0, -1, 1.5, 8 * 24 * 3600, Number.NaN]) {
      expect(() => signViewLink({ caseId: "c", owner: "o", keyId: "k-1" }, SECRET, ttl, NOW)).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
    }
    expect(() => signViewLink({ caseId: "", owner: "o", keyId: "k-1" }, SECRET, 60, NOW)).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
    expect(() => signViewLink({ caseId: "c", owner: "", keyId: "k-1" }, SECRET, 60, NOW)).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
    expect(() => signViewLink({ caseId: "c", owner: "o", keyId: "" }, SECRET, 60, NOW)).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
    expect(() => signViewLink({ caseId: "c", owner: "o", keyId: "k-1" }, "a".repeat(31), 60, NOW)).toThrow(expect.objectContaining({ code: "CONFIG_INVALID" }));
  });
});
