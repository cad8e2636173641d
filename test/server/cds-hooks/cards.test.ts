import { describe, expect, it } from "vitest";
import { resultCard, startedCard } from "../../../src/server/cds-hooks/cards.js";
import { syntheticCase } from "../view/view-fixtures.js";

describe("CDS Hooks cards", () => {
  it("a long answer's summary is clipped to fewer than 140 characters (2.0.1: a <140-character summary)", () => {
    const { result } = syntheticCase(5);
    const long = { ...result, answer: { option: "A", text: "x".repeat(300) } };
    const card = resultCard(long, "https://medmmv.example.org/cases/c/view?token=t");
    expect(card.summary.length).toBeLessThan(140);
    expect(card.summary.endsWith("…")).toBe(true);
  });

  it("a summary of exactly 139 characters is kept whole", () => {
    const { result } = syntheticCase(5);
    const text = "y".repeat(139 - "medmmv: ".length - " (support 100%)".length);
    const card = resultCard({ ...result, answer: { option: "A", text } }, "https://medmmv.example.org/v");
    expect(card.summary).toBe(`medmmv: ${text} (support 100%)`);
    expect(card.summary).toHaveLength(139);
  });

  it("the detail lists the differential (top 3, runs and CU) and, when one was composed, the verified reply instead of the path summary", () => {
    const { result } = syntheticCase(5);
    const entry = (rank: number, text: string, rollouts: number) => ({ rank, answer: { option: null, text }, wordings: [text], rollouts, of: 5, share: rollouts / 5, bestCu: 1.5 - rank / 10, candidateIndex: 0 });
    const differential = [entry(1, "Inferior STEMI", 3), entry(2, "Acute pericarditis", 1), entry(3, "Aortic dissection", 1), entry(4, "Pulmonary embolism", 0)];
    const card = resultCard({ ...result, answer: { option: null, text: "Inferior STEMI" }, differential }, "https://medmmv.example.org/v");
    expect(card.summary).toMatch(/^medmmv: Inferior STEMI/);
    expect(card.detail).toContain("**Differential:**\n1. Inferior STEMI — 3 of 5 runs, best path CU 1.40\n2. Acute pericarditis — 1 of 5 runs, best path CU 1.30\n3. Aortic dissection — 1 of 5 runs, best path CU 1.20");
    expect(card.detail).not.toContain("Pulmonary embolism");
    const replied = resultCard({ ...result, reply: { text: "The most likely diagnosis is an inferior STEMI.", claims: [], removedClaims: 0 } }, "https://medmmv.example.org/v");
    expect(replied.detail).toContain("**Reply:** The most likely diagnosis is an inferior STEMI.");
    expect(replied.detail).not.toContain("**Reasoning:**");
  });

  it("what was not read makes the card a warning that names it", () => {
    const { result } = syntheticCase(5);
    const notRead = [{ key: "conditions", reason: "the FHIR server answered 401" }];
    const card = resultCard(result, "https://medmmv.example.org/v", notRead);
    expect(card.indicator).toBe("warning");
    expect(card.detail).toContain("**Not read:** conditions — active problems (the FHIR server answered 401)");
    const started = startedCard("https://medmmv.example.org/v", false, notRead);
    expect(started).toMatchObject({ indicator: "warning", summary: "medmmv started analysing this record (part of it could not be read)" });
    expect(started.detail).toContain("conditions — active problems (the FHIR server answered 401)");
    expect(startedCard("https://medmmv.example.org/v", false).indicator).toBe("info");
  });
});
