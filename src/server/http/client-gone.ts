import type { FastifyReply } from "fastify";
import { MedmmvError } from "../../core/contracts/errors.js";

/**
 * Run `work` with a signal that aborts when the client closes its connection before the
 * answer was written: a case whose caller went away stops fetching and decoding its images
 * (the PACS request in flight is dropped, none follows) instead of finishing for nobody.
 * POST /diagnose and the CDS Hooks service both submit cases this way.
 */
export async function whileClientConnected<T>(reply: FastifyReply, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const gone = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableEnded) gone.abort(new MedmmvError("ABORTED", "the client closed the request"));
  };
  reply.raw.once("close", onClose);
  try {
    return await work(gone.signal);
  } finally {
    reply.raw.off("close", onClose);
  }
}
