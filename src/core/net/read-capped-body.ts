/**
 * A response body read whole, but never past `maxBytes`: a declared Content-Length over the cap
 * is refused before reading, and a body that grows past it is cancelled at the chunk that
 * crosses it, so a hostile or broken server cannot make us buffer more than the cap. Returns
 * null when the cap was hit (the caller says what that means at its site); an absent body is
 * empty.
 */
export async function readCappedBody(res: Response, maxBytes: number): Promise<Buffer | null> {
  if (Number(res.headers.get("content-length")) > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return null;
  }
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
