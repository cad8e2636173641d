import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { registerEvalCommands } from "../../src/cli/eval-command.js";
import { STUDIES } from "../../src/eval/studies.js";

describe("registered eval studies", () => {
  it("have distinct names", () => {
    const names = STUDIES.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(["probes", "stagewise", "conversation", "healthbench", "open"]);
  });

  it("each flag a study declares is an option of `medmmv eval`, once, with the study's description", () => {
    const program = new Command();
    registerEvalCommands(program);
    const evalCmd = program.commands.find((c) => c.name() === "eval")!;
    for (const f of STUDIES.flatMap((s) => s.flags ?? [])) {
      const matching = evalCmd.options.filter((o) => o.flags === f.flags);
      expect(matching, f.flags).toHaveLength(1);
      expect(matching[0]!.description).toBe(f.description);
      if (f.choices) expect(matching[0]!.argChoices).toEqual([...f.choices]);
    }
  });

  it("a study without records of its kind adds nothing but its always-present keys", () => {
    const parts = STUDIES.map((s) => ({ ...s.metrics?.([]), ...s.summary?.([]) }));
    expect(parts).toEqual([{ robustness: null }, {}, {}, {}, {}]);
  });
});
