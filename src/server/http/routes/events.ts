import type { OutgoingHttpHeaders } from "node:http";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { Config } from "../../../core/config.js";
import { MedmmvError } from "../../../core/contracts/errors.js";
import { isTerminal } from "../../service/case-service.js";
import type { StreamEnd } from "../../service/event-hub.js";
import type { CaseEvent } from "../../store/case-store.js";
import { requirePermission } from "../auth.js";
import { CaseIdParams, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const EventsQuery = z.object({
  lastEventId: z.coerce.number().int().min(0).optional().describe("Same as the Last-Event-ID header, for clients that cannot set headers"),
});

const EventsHeaders = z.looseObject({
  "last-event-id": z.string().max(20).regex(/^\d*$/, "Last-Event-ID must be an event id (a non-negative integer)").optional(),
});

/** Which count of RouteDeps.openStreams a request's stream goes to, its cap, and what a refusal says. */
export type StreamPoolOf = (request: FastifyRequest, config: Config) => { key: string; max: number; refusal: string };

/** The key's own streams, whichever path serves them. */
export const keyStreamPool: StreamPoolOf = (request, config) => ({
  key: request.owner,
  max: config.http.maxEventStreamsPerKey,
  refusal: `too many open event streams: at most ${config.http.maxEventStreamsPerKey} per API key (MEDMMV_MAX_EVENT_STREAMS_PER_KEY)`,
});

function frame(ev: CaseEvent): string {
  return `id: ${ev.seq}\nevent: ${ev.type}\ndata: ${JSON.stringify({ seq: ev.seq, type: ev.type, at: ev.at, data: ev.data })}\n\n`;
}

/**
 * Server-Sent Events for one case: first the stored history after Last-Event-ID, then
 * live events, then the stream closes after the `final` event. Live events come through the
 * case service's hub, which the case engine feeds from every replica (Redis pub/sub with
 * REDIS_URL), so a case another replica runs streams here as it happens, with no store
 * polling. A live event that skips sequence numbers (a message lost while Redis reconnected)
 * makes the stream read the missing ones from the store first; at each heartbeat a stream
 * whose case runs elsewhere checks that the case did not end unheard. The reply is hijacked
 * (docs/architecture.md#known-pitfalls); live events that arrive while history is being sent are buffered and
 * de-duplicated by sequence number, so nothing is skipped or sent twice. `path`: the audit page
 * serves the same stream under its own authentication (a signed link) at another path.
 */
export const eventRoutes: FastifyPluginAsyncZod<RouteDeps & { path?: string; pool?: StreamPoolOf }> = async (app, { service, access, heartbeatMs, config, openStreams, path = "/cases/:id/events", pool = keyStreamPool }) => {
  // Open streams per key in this process: each holds a socket and a subscription for as long as
  // the client likes, so one key could otherwise hold thousands (429 past the cap). The counts are
  // the app's (RouteDeps.openStreams); `pool` picks which one a stream goes to: the key's own by
  // default, or, for the audit page's stream, the key's view-link pool with its own smaller cap.
  app.get(
    path,
    {
      schema: {
        tags: ["cases"],
        summary: "Server-Sent Events: one event per pipeline step, history first",
        description:
          "Event types: status, rollout, evidence, hd-verdict, repair, path-scored, branch-failed, scores, final. Each event's `id` is its sequence number; reconnect with `Last-Event-ID` to continue where you left off. Comment lines (`: heartbeat`) keep idle connections open. The stream ends after `final` (or with `deleted` when the case is purged).",
        params: CaseIdParams,
        querystring: EventsQuery,
        headers: EventsHeaders,
        response: {
          200: { description: "text/event-stream", content: { "text/event-stream": { schema: z.string() } } },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const scope = requirePermission(request, "read");
      await access.audited(request, "events", id, () => service.get(scope, id)); // 404 before anything is streamed
      const { key: owner, max: maxStreams, refusal } = pool(request, config);
      const held = openStreams.get(owner) ?? 0;
      if (held >= maxStreams) throw new MedmmvError("RATE_LIMITED", `${refusal}; close one, or poll GET /cases/{id}`, { details: { limit: maxStreams } });
      openStreams.set(owner, held + 1);
      let counted = true;
      const release = (): void => {
        if (!counted) return;
        counted = false;
        const n = (openStreams.get(owner) ?? 1) - 1;
        if (n > 0) openStreams.set(owner, n);
        else openStreams.delete(owner);
      };
      const header = request.headers["last-event-id"];
      let last = header ? Number(header) : (request.query.lastEventId ?? 0);

      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        ...(reply.getHeaders() as OutgoingHttpHeaders),
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
      raw.write("retry: 2000\n\n");

      let open = true;
      let replaying = true;
      const buffered: CaseEvent[] = [];
      let heartbeat: NodeJS.Timeout | undefined;
      let unsubscribe = (): void => undefined;

      const finish = (): void => {
        if (!open) return;
        open = false;
        if (heartbeat) clearInterval(heartbeat);
        unsubscribe();
        raw.end();
      };
      const send = (ev: CaseEvent): void => {
        if (!open || ev.seq <= last) return;
        last = ev.seq;
        raw.write(frame(ev));
        if (ev.type === "final") finish();
      };

      raw.on("close", () => {
        release();
        open = false;
        if (heartbeat) clearInterval(heartbeat);
        unsubscribe();
      });
      /** One store read at a time, in order with the live events it is filling in for. */
      let chain: Promise<void> = Promise.resolve();
      const fromStore = (thenEndIfFinished: boolean): void => {
        chain = chain.then(async () => {
          if (!open) return;
          try {
            for (const ev of await service.events(id, last)) send(ev);
            if (!open || !thenEndIfFinished) return;
            const now = await service.get(scope, id).catch(() => null);
            if (!now) {
              raw.write(`event: deleted\ndata: ${JSON.stringify({ caseId: id })}\n\n`);
              finish();
            } else if (isTerminal(now.status)) {
              for (const ev of await service.events(id, last)) send(ev);
              finish();
            }
          } catch (err) {
            request.log.warn({ caseId: id, err }, "event stream: reading the store failed");
          }
        });
      };
      const live = (ev: CaseEvent): void => {
        if (replaying) buffered.push(ev);
        else if (ev.seq > last + 1) {
          fromStore(false); // a gap: the missing events first, then this one (send skips what it already sent)
          chain = chain.then(() => send(ev));
        } else send(ev);
      };
      unsubscribe = service.subscribe(id, {
        onEvent: live,
        onEnd: (reason: StreamEnd) => {
          if (open && reason === "deleted") raw.write(`event: deleted\ndata: ${JSON.stringify({ caseId: id })}\n\n`);
          finish();
        },
      });
      heartbeat = setInterval(() => {
        if (open) raw.write(": heartbeat\n\n");
        // A case run elsewhere whose final event this replica missed still ends its stream.
        if (open && !replaying && !service.isRunning(id)) fromStore(true);
      }, heartbeatMs);
      heartbeat.unref();

      try {
        for (const ev of await service.events(id, last)) send(ev);
        replaying = false;
        for (const ev of buffered.splice(0)) live(ev);
        // A finished case whose history has no final event (or a case purged meanwhile): nothing more will come.
        if (open && !service.isRunning(id)) {
          const now = await service.get(scope, id).catch(() => null);
          if (!now || isTerminal(now.status)) finish();
        }
      } catch (err) {
        request.log.warn({ caseId: id, err }, "event stream failed");
        finish();
      }
    },
  );
};
