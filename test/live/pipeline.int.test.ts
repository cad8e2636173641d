import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/core/config.js";
import { loadCaseFile } from "../../src/core/intake/load-case.js";
import { intakeSettings } from "../../src/core/intake/intake-settings.js";
import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";

/**
 * Runs only with MEDMMV_LIVE=1 and an endpoint configured by environment: the same code
 * path as `medmmv diagnose`, against a real OpenAI-compatible model.
 */
const live = process.env.MEDMMV_LIVE === "1" && !!process.env.MEDMMV_MODEL;

describe.runIf(live)("live endpoint", () => {
  it("diagnoses the example case end to end", async () => {
    const config = loadConfig();
    const file = fileURLToPath(new URL("../../examples/chest-pain.json", import.meta.url));
    const c = await loadCaseFile(file, intakeSettings(config));
    const { result } = await new Pipeline(config).run(c, pipelineOptions(config, { k: 3, maxRepairs: 1 }));
    expect(() => DiagnosisResult.parse(result)).not.toThrow();
    expect(["completed", "abstained"]).toContain(result.status);
    expect(result.usage.llmCalls).toBeGreaterThan(3);
  });
});
