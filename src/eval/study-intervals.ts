import { conversationMetrics } from "./conversation/metrics.js";
import type { ConversationOutcome, QuestionOrder } from "./conversation/types.js";
import { computeRobustness } from "./probes/robustness.js";
import type { ResultRecord } from "./results-file.js";
import { computeStagewise } from "./stagewise/metrics.js";
import { clusterBootstrapMany, clustersBy, type Interval } from "./stats/index.js";

/**
 * 95 % intervals for the studies' figures — ClinHallu's H_V/H_K/H_R, Dr-LLaVA's
 * A_Q/A_C/A_D/H_cc, the robustness probes' rates — by a percentile bootstrap over items that
 * recomputes each figure with the study's own function on every resample. The studies keep
 * their definitions; this only resamples what they are computed from.
 */

export type Intervals<K extends string> = Record<K, Interval | null>;

export interface StudyIntervals {
  stagewise?: Intervals<"hV" | "hK" | "hR">;
  conversation?: Partial<Record<QuestionOrder, Intervals<"aQ" | "aC" | "aD" | "hCC">>>;
  robustness?: Intervals<"accuracy" | "agreesWithHypothesis" | "agreesWithWrong" | "consistency" | "flipRate">;
}

/** The dataset item a record comes from: probes (`id#p2`) and conversation orders (`id@si`) of one item resample together. */
export const baseItem = (id: string): string => id.replace(/#p\d+$/, "").replace(/@[^@]*$/, "");

function intervalsOf<K extends string>(records: readonly ResultRecord[], keys: readonly K[], stat: (s: ResultRecord[]) => Partial<Record<K, number | null>> | null): Intervals<K> {
  const clusters = clustersBy(records, (r) => baseItem(r.id));
  const cis = clusterBootstrapMany(
    clusters,
    (s) => {
      const v = stat(s);
      return keys.map((k) => v?.[k] ?? null);
    },
    keys.length,
    { relabel },
  );
  return Object.fromEntries(keys.map((k, i) => [k, cis[i]!])) as Intervals<K>;
}

/** A drawn item's records under ids of their own (`id~d`), so one drawn twice counts twice wherever a study groups by id. */
export function relabel(r: ResultRecord, draw: number): ResultRecord {
  return { ...r, id: `${r.id}~${draw}`, ...(r.permutation ? { permutation: { ...r.permutation, baseId: `${r.permutation.baseId}~${draw}` } } : {}) };
}

type WithConversation = ResultRecord & { conversation?: ConversationOutcome };

export function studyIntervals(records: readonly ResultRecord[]): StudyIntervals | undefined {
  const out: StudyIntervals = {};
  if (records.some((r) => r.stagewise)) out.stagewise = intervalsOf(records, ["hV", "hK", "hR"] as const, (s) => computeStagewise(s));
  const conv = (records as readonly WithConversation[]).filter((r) => r.conversation);
  if (conv.length) {
    const byOrder: NonNullable<StudyIntervals["conversation"]> = {};
    for (const order of [...new Set(conv.map((r) => r.conversation!.order))])
      byOrder[order] = intervalsOf(
        conv.filter((r) => r.conversation!.order === order),
        ["aQ", "aC", "aD", "hCC"] as const,
        (s) => conversationMetrics((s as WithConversation[]).map((r) => r.conversation!)),
      );
    out.conversation = byOrder;
  }
  if (records.some((r) => r.hypothesis || r.permutation)) out.robustness = intervalsOf(records, ["accuracy", "agreesWithHypothesis", "agreesWithWrong", "consistency", "flipRate"] as const, (s) => computeRobustness(s));
  return Object.keys(out).length ? out : undefined;
}
