import { InvalidArgumentError } from "commander";
import { markdownTable, pct, percentRow, type Row } from "../report-table.js";
import type { ResultRecord } from "../results-file.js";
import type { EvalStudy, FigureTable } from "../study.js";
import { conversationMetrics } from "./metrics.js";
import type { EvalSummary } from "../summary.js";
import { CONVERSATION_DATASETS, QUESTION_ORDERS, type ConversationOutcome, type QuestionOrder } from "./types.js";

/** `--order si,df,ii,ii-sample`: any of the question orders. */
export function orderList(orders: string[]): QuestionOrder[] {
  const bad = orders.filter((x) => !(QUESTION_ORDERS as readonly string[]).includes(x));
  if (bad.length || orders.length === 0) throw new InvalidArgumentError(`expected a comma-separated list of ${QUESTION_ORDERS.join(", ")}`);
  return orders as QuestionOrder[];
}

/** Turns whose gold answer the labeller could not label, said out loud (each record's warnings name the turn). */
function unlabelledGoldLines(c: NonNullable<EvalSummary["conversation"]>, orders: readonly QuestionOrder[]): string[] {
  const per = orders.filter((o) => (c[o]?.goldUnlabelled ?? 0) > 0).map((o) => `${o}: ${c[o]!.goldUnlabelled}`);
  return per.length ? [`Gold answers that name no category of their step (scored against the record's path instead; the records' warnings name each turn): ${per.join(", ")}.`, ""] : [];
}

type WithConversation = ResultRecord & { conversation?: ConversationOutcome };

/**
 * Dr-LLaVA's table, one per question order: A_Q (a share of turns, which pair through their
 * conversation) and A_C, A_D and both H_cc (shares of conversations: one per item and order).
 */
function conversationFigures(records: readonly ResultRecord[]): FigureTable[] {
  const orders = new Set((records as readonly WithConversation[]).flatMap((r) => (r.conversation ? [r.conversation.order] : [])));
  return QUESTION_ORDERS.filter((o) => orders.has(o)).map((order) => ({
    table: `Dr-LLaVA conversations, ${order}`,
    figures: [{ name: "A_Q" }, { name: "A_C", perItem: true }, { name: "A_D", perItem: true }, { name: "H_cc reference", perItem: true }, { name: "H_cc labelled-only", perItem: true }],
    values: (rs) => {
      const m = conversationMetrics((rs as readonly WithConversation[]).flatMap((r) => (r.conversation?.order === order ? [r.conversation] : [])));
      return [m.aQ, m.aC, m.aD, m.hCCReference, m.hCC];
    },
  }));
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
        markdownTable(["order", "conversations", "questions", "A_Q", "A_C", "A_D", "H_cc (reference)", "H_cc (labelled only)", "failed"], orders.map((o) => { const m = s.conversation![o]!; return [o, String(m.conversations), String(m.questions), pct(m.aQ), pct(m.aC), pct(m.aD), pct(m.hCCReference), pct(m.hCC), String(m.failed)]; }), ["l", "r", "r", "r", "r", "r", "r", "r", "r"]),
        "",
        ...unlabelledGoldLines(s.conversation, orders),
        "A turn is correct when the labels of the model's answer and of the gold answer agree (the record's path where the gold answer names no category). A_D counts the conversations that asked the diagnosis. H_cc (reference): conversations with an answer off every valid path, an answer naming no category included, as Dr-LLaVA counts it; H_cc (labelled only): conversations whose labelled answers fit no valid path (docs/evaluation.md#conversations-dr-llava).",
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
      for (const [key, name] of [["aQ", "A_Q"], ["aC", "A_C"], ["aD", "A_D"], ["hCCReference", "H_cc reference"], ["hCC", "H_cc labelled-only"]] as const) rows.push(percentRow(`${name} ${order} (%)`, (s) => s.conversation?.[order]?.[key]));
    }
    return rows;
  },
  figureTables: conversationFigures,
  flags: [
    {
      flags: "--order <orders>",
      description: `conversation datasets: question orders, any of ${QUESTION_ORDERS.join(",")} (standard; diagnosis first = the whole sequence reversed; improvised = every question once in a random order; ii-sample = 2 to all questions drawn without replacement; seeded by --seed); default si,df,ii`,
      list: orderList,
    },
  ],
};
