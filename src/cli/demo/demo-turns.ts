import type { ConversationTurn } from "../../server/store/case-store.js";

/** A turn as `serve --demo` reports it (a subset of GET /cases/{id}/turns). */
export type DemoTurn = Pick<ConversationTurn, "turn" | "question" | "answer" | "step" | "category" | "contextConflict">;

/** The demo's authenticated JSON call to its own service. */
export type DemoApi = <T>(path: string, init?: RequestInit & { json?: unknown }) => Promise<T>;

/**
 * The scripted conversation of a demo case, posted over HTTP like any client would, so the
 * audit view shows turns. Only the questions not yet asked are posted: a restart on the
 * same store finds the earlier turns and asks nothing twice.
 */
export async function askDemoQuestions(api: DemoApi, caseId: string, questions: readonly string[]): Promise<DemoTurn[]> {
  const at = `/cases/${encodeURIComponent(caseId)}/turns`;
  const turns = (await api<{ turns: DemoTurn[] }>(at)).turns.map(pick);
  for (const question of questions.slice(turns.length)) turns.push(pick(await api<DemoTurn>(at, { method: "POST", json: { question } })));
  return turns;
}

function pick(t: DemoTurn): DemoTurn {
  return { turn: t.turn, question: t.question, answer: t.answer, step: t.step, category: t.category, contextConflict: t.contextConflict };
}

/** The turns as `serve --demo` prints them under the case's link. */
export function describeTurns(turns: readonly DemoTurn[]): string[] {
  return turns.flatMap((t) => [
    `  Turn ${t.turn}: ${t.question}`,
    `    → ${t.answer}`,
    `    (${t.step ?? "no step"}: ${t.category ?? "unlabelled"}${t.contextConflict ? "; CONTEXT CONFLICT" : "; on a valid path"})`,
  ]);
}
