import type { EvalStudy } from "../study.js";
import { computeRobustness } from "./robustness.js";
import { robustnessMarkdown, robustnessRows } from "./robustness-report.js";
import { HYPOTHESIS_KINDS, MAX_SHUFFLES } from "./types.js";

/** Robustness probes (docs/evaluation.md#robustness-probes): summary.json's `robustness`, its section and rows. */
export const probesStudy: EvalStudy = {
  name: "probes",
  // Always present (null without probes): older readers look for the key.
  metrics: (records) => ({ robustness: computeRobustness(records) }),
  markdown: { after: "hallucinations", section: (s) => robustnessMarkdown(s.robustness) },
  rows: robustnessRows,
  flags: [
    {
      flags: "--hypothesis <kind>",
      description: "robustness probe: a clinician's right (-r) or wrong (-w, seeded by --seed) hypothesis before each question, as a confirmation (cq) or rationalisation (rq) query",
      choices: HYPOTHESIS_KINDS,
    },
    { flags: "--shuffle-options <n>", description: "robustness probe: N seeded option orders per item, each its own item id#p1…", int: [1, MAX_SHUFFLES] },
  ],
  runOptions: (o) => ({ hypothesis: o["hypothesis"], shuffleOptions: o["shuffleOptions"] }),
};
