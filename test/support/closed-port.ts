import { createServer } from "node:net";

/** A port on 127.0.0.1 that refuses connections: bound once, then released (free for a server a test starts). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
