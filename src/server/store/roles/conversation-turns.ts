/**
 * Conversation turns: the follow-up questions asked about a finished case and the answers
 * given, one numbered turn at a time. The conversation service stores and reads them; the
 * view shows them. Turns belong to a case and go with it when it is deleted.
 */
import type { ConversationTurn, NewTurn } from "../../../core/contracts/conversation-turn.js";

export type { ConversationTurn, NewTurn };

export interface ConversationTurns {
  /** Store turn `turn.turn` of a case's conversation: NOT_FOUND without the case, CONFLICT if that turn exists. */
  addTurn(caseId: string, turn: NewTurn): Promise<ConversationTurn>;
  /** The case's turns in order (none for a missing case). */
  listTurns(caseId: string): Promise<ConversationTurn[]>;
}
