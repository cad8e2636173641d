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
