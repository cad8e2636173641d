import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";

/**
 * A response body read whole, but never past `maxBytes`: a declared Content-Length over the cap
 * is refused before reading, and a body that grows past it is dropped at the chunk that
 * crosses it, so a hostile or broken server cannot make us buffer more than the cap. Returns
 * null when the cap was hit (the caller says what that means at its site); an absent body is
 * empty.
 */
export async function readCappedBody(res: Response, maxBytes: number): Promise<Buffer | null> {
  if (!res.body) return Number(res.headers.get("content-length")) > maxBytes ? null : Buffer.alloc(0);
  return readCappedStream(Readable.fromWeb(res.body as NodeReadableStream<Uint8Array>), res.headers.get("content-length"), maxBytes);
}

/** The same for a Node stream (an undici `request` reply), given the reply's Content-Length. */
export async function readCappedStream(body: Readable, declaredLength: string | null, maxBytes: number): Promise<Buffer | null> {
  if (Number(declaredLength) > maxBytes) {
    body.destroy();
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/**
 * A response body handed to `onChunk` as it arrives, never past `maxBytes`: nothing is kept
 * here, so what the caller keeps is all that is held. Returns the bytes read, or null when the
 * cap was hit (a declared Content-Length over it, or the chunk that crosses it, which is not
 * handed on); a throwing `onChunk` drops the rest of the body and is rethrown.
 */
export async function streamCappedBody(res: Response, maxBytes: number, onChunk: (chunk: Uint8Array) => void): Promise<number | null> {
  if (Number(res.headers.get("content-length")) > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return null;
  }
  if (!res.body) return 0;
  const reader = res.body.getReader();
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return size;
      size += value.byteLength;
      if (size > maxBytes) return null;
      onChunk(value);
    }
  } finally {
    // Whatever ended the read (the cap, the caller's refusal, a reset), the rest is not waited for.
    await reader.cancel().catch(() => undefined);
  }
}
