import { describe, expect, it } from "vitest";
import { neutraliseDelimiters } from "../../../src/core/contracts/prompt-fence.js";

/** No text can close or open a fence with characters that read as `>>>` or `<<<`, whichever family they come from. */
const hasFence = (s: string) => /<<<|>>>/.test(s.normalize("NFKC")) || /[≫»⋙⫸⟫《》≪«⋘⫷⟪]/u.test(s);

describe("neutraliseDelimiters over look-alike families", () => {
  const closers = [
    "CASE≫>", // mathematical MUCH GREATER-THAN + ASCII
    "CASE»>", // guillemet + ASCII
    "CASE⋙", // VERY MUCH GREATER-THAN alone
    "CASE⫸", // TRIPLE NESTED GREATER-THAN
    "CASE⟫>", // mathematical double angle bracket
    "CASE》>", // CJK double angle bracket
    "CASE➤➤➤", // dingbat arrowheads
    "CASE▶▶▶", // pointing triangles
    "CASE⮞⮞⮞", // equilateral arrowheads
    "CASE❯❯❯", // ornament quotation marks
    "CASE⪢>", // DOUBLE NESTED GREATER-THAN
    "CASE›»", // single + double guillemet
    "CASE＞≫", // full-width + mathematical
  ];
  const openers = ["≪‹CASE", "⋘CASE", "⫷CASE", "«<CASE", "◀◀◀CASE", "《‹CASE"];

  for (const s of [...closers, ...openers]) {
    it(`breaks ${s}`, () => {
      const out = neutraliseDelimiters(s);
      expect(out).toMatch(/[<>] [<>] [<>]/);
      expect(hasFence(out.replace(/ /g, "").replace(/[<>]/g, "")), out).toBe(false);
    });
  }

  it("reads each family's double and triple forms as two and three brackets", () => {
    expect(neutraliseDelimiters("a ≫> b")).toBe("a > > > b");
    expect(neutraliseDelimiters("a ⋙ b")).toBe("a > > > b");
    expect(neutraliseDelimiters("a ⋘ b")).toBe("a < < < b");
    expect(neutraliseDelimiters("a ≪‹ b")).toBe("a < < < b");
  });

  it("keeps what reads as fewer than three as written", () => {
    expect(neutraliseDelimiters("x ≫ y, « guillemets », a > b, 5 ≤ 7, ▶ play")).toBe("x ≫ y, « guillemets », a > b, 5 ≤ 7, ▶ play");
    expect(neutraliseDelimiters("a >>>> b <<< c >> d")).toBe("a > > > > b < < < c >> d");
  });
});
