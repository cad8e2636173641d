import path from "node:path";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { SQLITE_FILE_NAME } from "../../src/core/database/database-names.js";
import { until } from "./until.js";

/**
 * How many tasks of a thread's latest checkpoint have their writes to `channel` stored: the
 * work a resume will not redo. A task's writes are stored after the node returns, so a node's
 * own events (progress, rollout) can be visible before them; tests that stop a process to check
 * a resume wait on this rather than on a pause.
 */
export async function checkpointedTasks(saver: BaseCheckpointSaver, threadId: string, channel: string): Promise<number> {
  const tuple = await saver.getTuple({ configurable: { thread_id: threadId } });
  return new Set((tuple?.pendingWrites ?? []).filter(([, ch]) => ch === channel).map(([task]) => task)).size;
}

/** Waits until at least `tasks` tasks of the thread have their `channel` writes checkpointed. */
export async function untilCheckpointed(saver: BaseCheckpointSaver, threadId: string, channel: string, tasks: number, ms = 10_000): Promise<number> {
  return until(async () => {
    const n = await checkpointedTasks(saver, threadId, channel);
    return n >= tasks ? n : undefined;
  }, ms, `${tasks} checkpointed "${channel}" writes of ${threadId}`);
}

/**
 * Waits on the checkpointer of a server running in another process, through a connection of
 * our own to its SQLite file (WAL: readers and the server's writer do not block each other).
 */
export async function untilCheckpointedInFile(dataDir: string, threadId: string, channel: string, tasks: number, ms = 10_000): Promise<number> {
  const db = new Database(path.join(dataDir, SQLITE_FILE_NAME));
  try {
    db.pragma("busy_timeout = 5000");
    return await untilCheckpointed(new SqliteSaver(db), threadId, channel, tasks, ms);
  } finally {
    db.close();
  }
}
