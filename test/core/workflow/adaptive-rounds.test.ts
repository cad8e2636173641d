import { describe, expect, it } from "vitest";
import { AdaptiveRounds, firstRoundSettled } from "../../../src/core/workflow/adaptive-rounds.js";

describe("adaptive rounds", () => {
  it("settles only on three answers that agree, none failed", () => {
    expect(firstRoundSettled(["B", "B", "B"])).toBe(true);
    expect(firstRoundSettled(["B", "C", "B"])).toBe(false);
    expect(firstRoundSettled(["B", null, "B"])).toBe(false);
    expect(firstRoundSettled(["B", "B"])).toBe(false);
  });

  it("tells the second round to stand down when the first agrees, and where to start its chain when not", async () => {
    const rounds = new AdaptiveRounds();
    rounds.open("agree", { resumed: false });
    const waiting = rounds.decision("agree");
    rounds.report("agree", 0, "B", 1);
    rounds.report("agree", 1, "B", 1);
    rounds.report("agree", 1, "C", 1); // a repeated report of one rollout changes nothing
    rounds.report("agree", 2, "B", 2);
    await expect(waiting).resolves.toEqual({ settled: true });

    rounds.open("split", { resumed: false });
    rounds.report("split", 0, "B", 1);
    rounds.report("split", 1, null, 3);
    rounds.report("split", 2, "B", 1);
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
