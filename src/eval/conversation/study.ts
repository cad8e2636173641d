import { InvalidArgumentError } from "commander";
import { markdownTable, pct, percentRow, type Row } from "../report-table.js";
import type { EvalStudy } from "../study.js";
import { CONVERSATION_DATASETS, QUESTION_ORDERS, type QuestionOrder } from "./types.js";

/** `--order si,df,ii`: any of the question orders. */
export function orderList(orders: string[]): QuestionOrder[] {
  const bad = orders.filter((x) => !(QUESTION_ORDERS as readonly string[]).includes(x));
  if (bad.length || orders.length === 0) throw new InvalidArgumentError(`expected a comma-separated list of ${QUESTION_ORDERS.join(", ")}`);
  return orders as QuestionOrder[];
}

/**
 * Conversation evals (docs/architecture.md#clinical-pathways-and-conversations): A_Q, A_C,
 * A_D, H_cc per question order. Their runner sets summary.json's `conversation` itself.
 */
export const conversationStudy: EvalStudy = {
  name: "conversation",
  markdown: {
    after: "headline",
    section: (s) => {
      if (!s.conversation) return [];
      const orders = QUESTION_ORDERS.filter((o) => s.conversation![o]);
      return [
        "## Conversations (Dr-LLaVA metrics, %)",
        "",
        markdownTable(["order", "conversations", "questions", "A_Q", "A_C", "A_D", "H_cc", "failed"], orders.map((o) => { const m = s.conversation![o]!; return [o, String(m.conversations), String(m.questions), pct(m.aQ), pct(m.aC), pct(m.aD), pct(m.hCC), String(m.failed)]; }), ["l", "r", "r", "r", "r", "r", "r", "r"]),
        "",
        "A turn is correct when the labeller's category equals the expected one. H_cc is the share of conversations whose labelled sequence fits no valid path (per conversation).",
        "",
      ];
    },
  },
  // The detector's verdicts on its turns (and the pipeline run's) are not counted: a zero there is not a measurement.
  hallucinationsNotMeasured: (s) => ((CONVERSATION_DATASETS as readonly string[]).includes(s.dataset.name) ? "Not measured: a conversation eval does not count flagged claims." : null),
  rows: (summaries) => {
    const rows: Row[] = [];
    for (const order of QUESTION_ORDERS) {
      if (!summaries.some((s) => s.conversation?.[order])) continue;
      for (const [key, name] of [["aQ", "A_Q"], ["aC", "A_C"], ["aD", "A_D"], ["hCC", "H_cc"]] as const) rows.push(percentRow(`${name} ${order} (%)`, (s) => s.conversation?.[order]?.[key]));
    }
    return rows;
  },
  flags: [
    {
      flags: "--order <orders>",
      description: `conversation datasets: question orders, any of ${QUESTION_ORDERS.join(",")} (standard, diagnosis first, improvised: random with replacement, seeded by --seed); default all`,
      list: orderList,
    },
  ],
};
