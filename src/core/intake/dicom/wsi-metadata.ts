import { Tokenizer, TokenParser, TokenType, type ParsedElementInfo, type ParsedTokenInfo } from "@streamparser/json";
import type { QidoItem } from "./dicomweb.js";
import { CappedString, type TokenStringBuilder } from "./capped-string.js";

/**
 * A whole-slide instance's WADO-RS metadata (DICOM JSON, PS3.18 F.2) read as its bytes arrive,
 * keeping only the attributes the pyramid reader uses (wsi-levels.ts). The JSON itself is never
 * held: a streaming tokenizer (@streamparser/json) turns each chunk into tokens, the token
 * parser builds only the values on the selected paths, and every other value (a padded private
 * attribute, an ICC profile, another tenant's 10 MiB of junk) is dropped as soon as it is
 * complete (keepStack: false). What stays is bounded by what is kept — a few scalars per
 * attribute and two int32 per frame position — not by the answer's size, and each chunk's work
 * is proportional to the chunk, so the event loop is never held for a whole answer.
 */

/** Attributes kept (their first MAX_VALUES values): image type, sizes, frames, pixel format, organisation, frame offset, window (a 16-bit greyscale slide's). */
const KEEP = ["00080008", "00480006", "00480007", "00280011", "00280010", "00280008", "00280002", "00280100", "00280004", "00209311", "00209228", "00281050", "00281051"];
const MAX_VALUES = 16;
/** Characters kept of a string value. */
const MAX_STRING = 200;
/** Per-frame positions kept (as many as a level may declare frames). */
export const MAX_POSITIONS = 250_000;
/** Optical paths kept. */
const MAX_PATHS = 8;
/**
 * Nesting past which an answer is refused: DICOM JSON nests four levels per sequence, and a
 * frame's position sits ten deep; a run of "[[[[…" would otherwise grow the parser's stack by
 * an object per byte.
 */
const MAX_DEPTH = 48;

/** A frame without a position in a FramePositions array. */
export const NO_POSITION = -0x80000000;

/** Column, row (1-based, in the total pixel matrix) of each frame, in pairs; NO_POSITION where a frame has none. */
export type FramePositions = Int32Array;

/** What an instance's metadata says for the pyramid reader. */
export interface SlideInstanceHeader {
  meta: QidoItem;
  /** From the Per-frame Functional Groups' PlanePositionSlideSequence, when a frame has one. */
  positions?: FramePositions;
}

const PER_FRAME = "$.0.52009230.Value.*.0048021A.Value.0";
const OPTICAL = "$.0.00480105.Value.*";
const PATHS = [
  ...KEEP.map((t) => `$.0.${t}.Value.*`),
  "$.0.52009229.Value.0.00289110.Value.0.00280030.Value.*",
  `${PER_FRAME}.0048021E.Value.0`,
  `${PER_FRAME}.0048021F.Value.0`,
  `${OPTICAL}.00282000.vr`,
  `${OPTICAL}.00480106.Value.0`,
  `${OPTICAL}.00480107.Value.0`,
  `${OPTICAL}.00220016.Value.0.00080104.Value.0`,
];

/** Why an answer cannot be read as one instance's metadata. */
export class WsiMetadataError extends Error {}

/** A string value as a fresh copy of its first characters (a slice of a large string would keep the large one alive). */
function copied(s: string): string {
  return Buffer.from(s.slice(0, MAX_STRING), "utf8").toString("utf8");
}

function scalar(v: unknown): string | number | undefined {
  if (typeof v === "string") return copied(v);
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/**
 * A 1-based position as int32: NO_POSITION for what is not a number; a fraction, or one past
 * int32, becomes a place outside any matrix (0, or clamped), refused when the tiles are placed.
 */
export function coordinate(v: unknown): number {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isFinite(n)) return NO_POSITION;
  if (!Number.isInteger(n)) return 0;
  return Math.max(-0x7fffffff, Math.min(0x7fffffff, n));
}

/** Characters of any string or number token the tokenizer builds (more than any value kept: MAX_STRING). */
const TOKEN_CHARS = 1024;

/**
 * The tokenizer with its string and number accumulators replaced by ones that build only a
 * token's first TOKEN_CHARS characters (capped-string.ts): a 7.5 MiB padded value is counted,
 * never built. None of @streamparser/json's options does this (stringBufferSize only changes
 * how the whole string is built; emitPartialTokens emits it in growing pieces, still whole at
 * the end; paths and keepStack drop a value only once the tokenizer has built it), so the
 * accumulators — the package's own StringBuilder interface, set once in the tokenizer's
 * constructor — are replaced on the instance. The version is pinned (0.0.x); the test checks
 * the replacement took (a tokenizer that no longer has them is refused at once, not silently
 * building whole strings again).
 */
export function withCappedStrings(tokenizer: Tokenizer): Tokenizer {
  const fields = tokenizer as unknown as { bufferedString?: TokenStringBuilder; bufferedNumber?: TokenStringBuilder };
  if (typeof fields.bufferedString?.appendBuf !== "function" || typeof fields.bufferedNumber?.appendBuf !== "function") {
    throw new Error("@streamparser/json's Tokenizer no longer has the string accumulators this reader caps (bufferedString, bufferedNumber)");
  }
  fields.bufferedString = new CappedString(TOKEN_CHARS);
  fields.bufferedNumber = new CappedString(TOKEN_CHARS);
  return tokenizer;
}

/**
 * One answer's summary, fed chunk by chunk: `write` each chunk as it arrives, then `end`.
 * Both throw WsiMetadataError for an answer that is not one DICOM JSON dataset.
 */
export class WsiMetadataReader {
  readonly #tokenizer = withCappedStrings(new Tokenizer());
  readonly #parser = new TokenParser({ paths: PATHS, keepStack: false });
  readonly #kept = new Map<string, Array<string | number>>();
  #spacing: number[] = [];
  #positions: Int32Array = new Int32Array(0);
  #frames = 0;
  readonly #paths: Array<{ icc?: boolean; id?: string; description?: string; illumination?: string }> = [];
  #depth = 0;
  #datasets = 0;
  #started = false;

  constructor() {
    this.#tokenizer.onToken = (t: ParsedTokenInfo) => {
      this.#shape(t);
      this.#parser.write(t);
    };
    this.#parser.onValue = (v: ParsedElementInfo) => this.#keep(v);
  }

  write(chunk: Uint8Array): void {
    try {
      this.#tokenizer.write(chunk);
    } catch (e) {
      throw e instanceof WsiMetadataError ? e : new WsiMetadataError("the server's metadata answer is not JSON");
    }
  }

  end(): SlideInstanceHeader {
    try {
      this.#tokenizer.end();
    } catch {
      throw new WsiMetadataError("the server's metadata answer is not JSON (it ends mid-value)");
    }
    if (!this.#started) throw new WsiMetadataError("the server's metadata answer is not a JSON array");
    if (this.#depth !== 0) throw new WsiMetadataError("the server's metadata answer is not JSON (it ends before its array closes)");
    if (this.#datasets !== 1) throw new WsiMetadataError(`the metadata answer for an instance holds ${this.#datasets} datasets, not one`);
    const meta: QidoItem = {};
    for (const [tag, values] of this.#kept) meta[tag] = { Value: values };
    if (this.#spacing.length === 2) meta["52009229"] = { Value: [{ "00289110": { Value: [{ "00280030": { Value: this.#spacing } }] } }] };
    if (this.#paths.length) {
      meta["00480105"] = {
        Value: this.#paths.map((p) => ({
          ...(p.icc ? { "00282000": { vr: "OB" } } : {}),
          ...(p.id !== undefined ? { "00480106": { Value: [p.id] } } : {}),
          ...(p.description !== undefined ? { "00480107": { Value: [p.description] } } : {}),
          ...(p.illumination !== undefined ? { "00220016": { Value: [{ "00080104": { Value: [p.illumination] } }] } } : {}),
        })),
      };
    }
    return { meta, ...(this.#frames > 0 ? { positions: this.#positions.slice(0, this.#frames * 2) } : {}) };
  }

  /** The answer's shape, token by token: one array of one object, nested no deeper than MAX_DEPTH. */
  #shape(t: ParsedTokenInfo): void {
    if (!this.#started) {
      if (t.token !== TokenType.LEFT_BRACKET) throw new WsiMetadataError("the server's metadata answer is not a JSON array");
      this.#started = true;
    } else if (this.#depth === 0) {
      throw new WsiMetadataError("the server's metadata answer holds more than one JSON value");
    } else if (this.#depth === 1 && t.token !== TokenType.COMMA && t.token !== TokenType.RIGHT_BRACKET) {
      if (t.token !== TokenType.LEFT_BRACE) throw new WsiMetadataError("the server's metadata answer holds something other than a dataset");
      this.#datasets += 1;
      if (this.#datasets > 1) throw new WsiMetadataError("the metadata answer for an instance holds more than one dataset");
    }
    if (t.token === TokenType.LEFT_BRACE || t.token === TokenType.LEFT_BRACKET) {
      this.#depth += 1;
      if (this.#depth > MAX_DEPTH) throw new WsiMetadataError(`the server's metadata answer nests deeper than ${MAX_DEPTH} levels`);
    } else if (t.token === TokenType.RIGHT_BRACE || t.token === TokenType.RIGHT_BRACKET) {
      this.#depth -= 1;
    }
  }

  /** A value on one of PATHS: stack[2] is the attribute's tag, stack[4] the item's index in its sequence. */
  #keep({ value, stack }: ParsedElementInfo): void {
    const tag = String(stack[2]?.key);
    if (tag === "52009230") return this.#position(Number(stack[4]?.key), String(stack[8]?.key), value);
    if (tag === "52009229") {
      const n = Number(value);
      if (this.#spacing.length < 2 && (typeof value === "number" || typeof value === "string") && Number.isFinite(n)) this.#spacing.push(n);
      return;
    }
    if (tag === "00480105") return this.#opticalPath(Number(stack[4]?.key), String(stack[5]?.key), value);
    const kept = this.#kept.get(tag) ?? [];
    const v = scalar(value);
    if (kept.length < MAX_VALUES && v !== undefined) kept.push(v);
    this.#kept.set(tag, kept);
  }

  #position(frame: number, which: string, value: unknown): void {
    if (!Number.isInteger(frame) || frame < 0 || frame >= MAX_POSITIONS) return;
    if (frame >= this.#frames) {
      if (frame * 2 + 2 > this.#positions.length) {
        // Grown by doubling: placing is linear in the frames.
        const grown = new Int32Array(Math.min(MAX_POSITIONS * 2, Math.max(64, (frame + 1) * 4))).fill(NO_POSITION);
        grown.set(this.#positions.subarray(0, this.#frames * 2));
        this.#positions = grown;
      }
      this.#frames = frame + 1;
    }
    this.#positions[frame * 2 + (which === "0048021E" ? 0 : 1)] = coordinate(value);
  }

  #opticalPath(k: number, tag: string, value: unknown): void {
    if (!Number.isInteger(k) || k < 0 || k >= MAX_PATHS) return;
    while (this.#paths.length <= k) this.#paths.push({});
    const p = this.#paths[k]!;
    const v = scalar(value);
    if (tag === "00282000") p.icc = true;
    else if (v === undefined) return;
    else if (tag === "00480106") p.id = String(v);
    else if (tag === "00480107") p.description = String(v);
    else if (tag === "00220016") p.illumination = String(v);
  }
}
