import type { Server } from "node:http";
import type { Socket } from "node:net";

/**
 * Lets a graceful stop end every connection that is not carrying a request. Fastify's
 * `forceCloseConnections: "idle"` relies on Node closing idle keep-alive sockets, but to
 * Node a socket that never sent a request (a browser's speculative preconnect: Chromium
 * opens them to an origin it has just loaded a page from) is not idle, so `server.close()`
 * waits on it for as long as the browser keeps it — seen as a shutdown that hung for
 * 70 s after an audit view was opened. Sockets with a request in flight are left to finish
 * (the service has already answered or aborted it), then closed when their response ends.
 */
export function connectionDrain(server: Server): { closeUnused(): void } {
  const sockets = new Set<Socket>();
  const inFlight = new Map<Socket, number>();
  let closing = false;
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      inFlight.delete(socket);
    });
  });
  server.on("request", (req, res) => {
    const socket = req.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    res.once("close", () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      if (left > 0) inFlight.set(socket, left);
      else {
        inFlight.delete(socket);
        if (closing) socket.destroy();
      }
    });
  });
  return {
    closeUnused() {
      closing = true;
      for (const socket of sockets) if (!inFlight.has(socket)) socket.destroy();
    },
  };
}
