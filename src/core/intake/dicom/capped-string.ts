/** The accumulator shape @streamparser/json's tokenizer writes a token's characters into (its utils/bufferedString StringBuilder; not exported by the package). */
export interface TokenStringBuilder {
  byteLength: number;
  appendChar(char: number): void;
  appendBuf(buf: Uint8Array, start?: number, end?: number): void;
  appendCharCode(code: number): void;
  reset(): void;
  toString(): string;
}

/**
 * A string accumulator for @streamparser/json's tokenizer that keeps only the first `cap`
 * characters of a token and counts the rest. The tokenizer builds every string (and number)
 * whole before its token is emitted, even one the token parser then drops unkept: a 7.5 MiB
 * padded private value in a lying PACS's metadata became a 7.5 MB string for a moment. Nothing
 * the metadata reader keeps is longer than a few hundred characters (it keeps 200 of any
 * string), so the rest of a long value is never built. Its bytes are still counted
 * (`byteLength`: the tokenizer's offsets) and the JSON grammar is still checked by the
 * tokenizer's state machine; only the dropped tail's UTF-8 is not decoded.
 */
export class CappedString implements TokenStringBuilder {
  byteLength = 0;
  #parts: string[] = [];
  #kept = 0;
  #string = "";
  readonly #decoder = new TextDecoder("utf-8", { fatal: true });

  constructor(readonly cap: number) {}

  appendChar(char: number): void {
    this.byteLength += 1;
    if (this.#kept >= this.cap) return;
    this.#parts.push(String.fromCharCode(char));
    this.#kept += 1;
  }

  appendBuf(buf: Uint8Array, start = 0, end = buf.length): void {
    this.byteLength += end - start;
    if (this.#kept >= this.cap) return;
    // At most as many bytes as characters are still wanted (a character is at least a byte),
    // cut back to a character's first byte so the decoder is never handed half a character.
    let cut = Math.min(end, start + (this.cap - this.#kept));
    while (cut > start && cut < end && (buf[cut]! & 0xc0) === 0x80) cut -= 1;
    const s = this.#decoder.decode(buf.subarray(start, cut));
    this.#parts.push(s);
    this.#kept += s.length;
  }

  appendCharCode(code: number): void {
    // An escape's bytes are counted by the tokenizer itself (as in its own builders).
    if (this.#kept >= this.cap) return;
    this.#parts.push(String.fromCharCode(code));
    this.#kept += 1;
  }

  reset(): void {
    this.#parts = [];
    this.#string = "";
    this.#kept = 0;
    this.byteLength = 0;
  }

  toString(): string {
    if (this.#parts.length > 0) {
      this.#string += this.#parts.join("");
      this.#parts = [];
    }
    return this.#string;
  }
}
