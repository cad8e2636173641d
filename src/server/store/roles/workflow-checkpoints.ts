/**
 * Workflow checkpoints: the LangGraph checkpointer that lets an interrupted case resume
 * from its last finished step, kept in the same backend as the cases (thread id = case id).
 * The server hands the checkpointer to the workflow; the case service prunes a case's
 * checkpoints once it is terminal.
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

export interface WorkflowCheckpoints {
  /**
   * Drop the workflow checkpoints of a case (thread id = case id). A terminal case needs
   * none: its result, full graph and events say everything, and it is never resumed. A
   * case's checkpoints hold the workflow state after every step (a few hundred kilobytes
   * for a k = 5 case), so keeping them would make the store grow ten times faster.
   */
  pruneCheckpoints(id: string): Promise<void>;
  /** LangGraph checkpointer in the same backend (SqliteSaver / PostgresSaver). */
  checkpointer(): BaseCheckpointSaver;
}
