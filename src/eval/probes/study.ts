import type { EvalStudy, FigureTable } from "../study.js";
import { pairAgainstFirst } from "./paired.js";
import { computeRobustness } from "./robustness.js";
import { pairedMarkdown, robustnessMarkdown, robustnessRows } from "./robustness-report.js";
import { HYPOTHESIS_KINDS, MAX_SHUFFLES } from "./types.js";

const ROBUSTNESS_FIGURES = [
  { key: "accuracy", name: "accuracy under the probe" },
  { key: "agreesWithHypothesis", name: "agrees with the hypothesis", perItem: true },
  { key: "agreesWithWrong", name: "agrees with a wrong hypothesis", perItem: true },
  // Per (item, run) group: the same option in every order or not.
  { key: "consistency", name: "consistency", perItem: true },
  { key: "flipRate", name: "flip rate" },
] as const;

/** The robustness table: the rates the probes ran (a figure a probe did not run is left out). */
function robustnessFigures(records: Parameters<NonNullable<EvalStudy["figureTables"]>>[0]): FigureTable[] {
  const r = computeRobustness(records);
  if (!r) return [];
  const present = ROBUSTNESS_FIGURES.filter((f) => r[f.key] !== null);
  return [{ table: "Robustness probes", figures: present.map((f) => ({ name: f.name, ...("perItem" in f ? { perItem: f.perItem } : {}) })), values: (rs) => { const x = computeRobustness(rs); return present.map((f) => x?.[f.key] ?? null); } }];
}

/** Robustness probes (docs/evaluation.md#robustness-probes): summary.json's `robustness`, its section and rows. */
export const probesStudy: EvalStudy = {
  name: "probes",
  // Always present (null without probes): older readers look for the key.
  metrics: (records) => ({ robustness: computeRobustness(records) }),
  markdown: { after: "hallucinations", section: (s) => robustnessMarkdown(s.robustness) },
  rows: robustnessRows,
  // Probe folders after the first (the clean run): what the probe changed, item by item.
  compareFolders: async (dirs, summaries) => {
    const pairs = await pairAgainstFirst(dirs, summaries.map((s) => Boolean(s.robustness)));
    pairs.forEach((p, i) => p && Object.assign(summaries[i]!, { pairedWithFirst: p }));
    return pairs.some(Boolean) ? (names) => pairedMarkdown(names, pairs) : null;
  },
  figureTables: robustnessFigures,
  flags: [
    {
      flags: "--hypothesis <kind>",
      description: "robustness probe: a clinician's right (-r) or wrong (-w, seeded by --seed) hypothesis before each question, as a confirmation (cq) or rationalisation (rq) query",
      choices: HYPOTHESIS_KINDS,
    },
    { flags: "--shuffle-options <n>", description: "robustness probe: N seeded option orders per item, each its own item id#p1…", int: [1, MAX_SHUFFLES] },
    {
      flags: "--hypothesis-warning <on|off>",
      description: "on (default): the prompts tell the model a clinician's hypothesis in the case is a claim to check; off: without that sentence, as Dr-LLaVA's probes ran (reference-comparable)",
      choices: ["on", "off"],
    },
  ],
  runOptions: (o) => ({ hypothesis: o["hypothesis"], shuffleOptions: o["shuffleOptions"], ...(o["hypothesisWarning"] === "off" ? { hypothesisWarning: false } : {}) }),
};
