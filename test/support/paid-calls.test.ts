import { describe, expect, it } from "vitest";
import { repaidCalls, type PaidCall } from "./paid-calls.js";

const call = (caseTag: string, promptKey: string, at: number): PaidCall => ({ caseTag, promptKey, at });

describe("calls paid twice, judged against the checkpoint a case resumed from", () => {
  it("allows a repeat whose first copy came after the checkpoint (the interrupted step)", () => {
    const s = repaidCalls([call("a", "p1", 10), call("a", "p2", 30), call("a", "p2", 50)], new Map([["a", 20]]));
    expect(s.repaid).toBe(1);
    expect(s.beyondCheckpoint).toEqual([]);
    expect(s.distinctByCase.get("a")).toBe(2);
  });

  it("flags a repeat of work the checkpoint already held", () => {
    const s = repaidCalls([call("a", "p1", 10), call("a", "p1", 50)], new Map([["a", 20]]));
    expect(s.beyondCheckpoint).toEqual([{ caseTag: "a", promptKey: "p1", firstAt: 10, checkpointAt: 20 }]);
  });

  it("flags any repeat of a case that had no checkpoint at the fault, and keeps cases apart", () => {
    const s = repaidCalls([call("a", "p1", 10), call("b", "p1", 11), call("b", "p1", 12)], new Map([["a", 5]]));
    expect(s.beyondCheckpoint.map((b) => b.caseTag)).toEqual(["b"]);
    expect(s.distinctByCase).toEqual(new Map([["a", 1], ["b", 1]]));
  });
});
