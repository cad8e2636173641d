import { describe, expect, it } from "vitest";
import { AdaptiveRounds, firstRoundSettled } from "../../../src/core/workflow/adaptive-rounds.js";

describe("adaptive rounds", () => {
  it("settles only on three answers that agree, none failed", () => {
    expect(firstRoundSettled(["B", "B", "B"])).toBe(true);
    expect(firstRoundSettled(["B", "C", "B"])).toBe(false);
    expect(firstRoundSettled(["B", null, "B"])).toBe(false);
    expect(firstRoundSettled(["B", "B"])).toBe(false);
  });

  it("hands the completed first round to its last rollout, which tells the second round to stand down or where to start its chain", async () => {
    const rounds = new AdaptiveRounds();
    rounds.open("agree", { resumed: false });
    const waiting = rounds.decision("agree");
    expect(rounds.report("agree", 0, "B", 1)).toBeNull();
    expect(rounds.report("agree", 1, "B", 1)).toBeNull();
    expect(rounds.report("agree", 1, "C", 1)).toBeNull(); // a repeated report of one rollout changes nothing
    expect(rounds.report("agree", 2, "B", 2)).toEqual({ answers: ["B", "B", "B"], depth: 2 });
    rounds.settle("agree", { settled: true });
    rounds.settle("agree", { settled: false, depth: 9 }); // the first decision stands
    await expect(waiting).resolves.toEqual({ settled: true });

    rounds.open("split", { resumed: false });
    rounds.report("split", 0, "B", 1);
    rounds.report("split", 1, null, 3);
    expect(rounds.report("split", 2, "B", 1)).toEqual({ answers: ["B", null, "B"], depth: 3 });
    rounds.settle("split", { settled: false, depth: 3 });
    await expect(rounds.decision("split")).resolves.toEqual({ settled: false, depth: 3 });
  });

  it("never leaves a second-round rollout waiting: resumed cases, ended cases, aborts", async () => {
    const rounds = new AdaptiveRounds();
    rounds.open("resumed", { resumed: true });
    await expect(rounds.decision("resumed")).resolves.toEqual({ settled: false, depth: 0 });

    rounds.open("ended", { resumed: false });
    const waiting = rounds.decision("ended");
    rounds.close("ended");
    await expect(waiting).resolves.toEqual({ settled: false, depth: 0 });

    rounds.open("aborted", { resumed: false });
    const ac = new AbortController();
    const aborted = rounds.decision("aborted", ac.signal);
    ac.abort();
    await expect(aborted).rejects.toMatchObject({ code: "ABORTED" });
    await expect(rounds.decision("unknown")).resolves.toEqual({ settled: false, depth: 0 });
  });
});
