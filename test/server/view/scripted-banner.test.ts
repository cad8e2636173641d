import { describe, expect, it } from "vitest";
import { scriptedModels } from "../../../src/server/view/client/scripted-banner.js";

describe("scripted-model banner", () => {
  it("is read from provenance.models: scripted servers' names only", () => {
    expect(scriptedModels({ executor: "scripted-demo", vision: "scripted-demo", judge: "scripted-demo" })).toEqual(["scripted-demo"]);
    expect(scriptedModels({ executor: "Scripted-Executor", judge: "gpt-4o" })).toEqual(["Scripted-Executor"]);
    // A real model, even one with the word in its name, is not flagged.
    expect(scriptedModels({ executor: "gpt-4o", vision: "Qwen2.5-VL-72B-Instruct", judge: "my-unscripted-model" })).toEqual([]);
    expect(scriptedModels({})).toEqual([]);
    // A rollout spread onto a scripted model flags the page too.
    expect(scriptedModels({ executor: "gpt-4o" }, ["gpt-4o", "scripted-executor"])).toEqual(["scripted-executor"]);
  });
});
