import diagnostics from "node:diagnostics_channel";

/**
 * Every HTTP request this process starts through undici, in the order they were started:
 * the model calls (model-transport.ts) and anything that uses fetch (a tokenizer download,
 * a tracing upload). Node's fetch and the undici package publish on the same channel.
 */
export interface RecordedRequest {
  url: string;
  /** The body as sent, when it was a string or bytes ("" otherwise). */
  body: string;
}

export function recordHttpRequests(): { requests: RecordedRequest[]; stop(): void } {
  const requests: RecordedRequest[] = [];
  const onCreate = (message: unknown): void => {
    const { request } = message as { request: { origin: string | URL; path: string; body?: unknown } };
    const body = typeof request.body === "string" ? request.body : request.body instanceof Uint8Array ? Buffer.from(request.body).toString("utf8") : "";
    requests.push({ url: new URL(request.path, request.origin).href, body });
  };
  diagnostics.subscribe("undici:request:create", onCreate);
  return { requests, stop: () => diagnostics.unsubscribe("undici:request:create", onCreate) };
}
