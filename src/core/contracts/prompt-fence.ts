/**
 * The one neutraliser of prompt fences. Every piece of text that is not ours — the client's
 * case, model output, web and corpus search content, the evidence graph built from them — is
 * put between fences such as `<<<CASE … CASE>>>` or `<<<UNTRUSTED_SEARCH_CONTENT … >>>`, and
 * the system prompt tells the model that fenced text is data. Text inside a fence must not be
 * able to close it (or open another) and then speak as the instructions, whatever characters
 * it uses to look like a delimiter to the model. In the ground floor so that every fence — the
 * agents', the evidence graph's, the eval's judges' — uses this one function.
 */

/**
 * Characters a model may read as `<` or `>`: the ASCII ones, their full-width and small-form
 * compatibility forms, and the common angle brackets and quotes of other scripts.
 */
export const LEFT_ANGLES = "<\uFF1C\uFE64\u2039\u2329\u3008\u27E8\u02C2\u1438\u276E\u29FC\u00AB\u226A\u300A\u226E";
export const RIGHT_ANGLES = ">\uFF1E\uFE65\u203A\u232A\u3009\u27E9\u02C3\u1433\u276F\u29FD\u00BB\u226B\u300B\u226F";

/**
 * Invisible characters that could hide a run of brackets from a check but not from the model:
 * format characters (zero-width space and joiners, word joiner, BOM, bidi controls, soft
 * hyphen), variation selectors, the combining grapheme joiner and the Hangul fillers.
 */
const INVISIBLE = /[\p{Cf}\uFE00-\uFE0F\u{E0100}-\u{E01EF}\u034F\u115F\u1160\u3164\uFFA0]/gu;

/** A run of three or more angle look-alikes, each with any combining marks drawn on it. */
const LEFT_RUN = new RegExp(`(?:[${LEFT_ANGLES}]\\p{M}*){3,}`, "gu");
const RIGHT_RUN = new RegExp(`(?:[${RIGHT_ANGLES}]\\p{M}*){3,}`, "gu");

/** `UNTRUSTED_SEARCH_CONTENT`, its letters in ASCII or full-width, with any separators between the words. */
const letter = (c: string): string => `[${c}${c.toLowerCase()}${String.fromCharCode(c.charCodeAt(0) + 0xfee0)}${String.fromCharCode(c.toLowerCase().charCodeAt(0) + 0xfee0)}]`;
const word = (w: string): string => Array.from(w, letter).join("");
const SEARCH_TOKEN = new RegExp(`${word("UNTRUSTED")}[\\s_\\-\\uFF3F\\uFF0D]*${word("SEARCH")}[\\s_\\-\\uFF3F\\uFF0D]*${word("CONTENT")}`, "gu");

/** Spaced ASCII brackets, one per bracket of the run: readable, and no longer a delimiter. */
const spaced = (run: string, bracket: "<" | ">"): string => Array.from(run.replace(/\p{M}/gu, ""), () => bracket).join(" ");

/**
 * Makes untrusted text unable to open or close a fence: drops invisible characters, breaks
 * every run of three or more angle brackets or look-alikes into spaced ASCII brackets
 * (`＞＞＞` → `> > >`), and renames the search-content fence's token. Everything else is kept
 * as written.
 */
export function neutraliseDelimiters(text: string): string {
  return text
    .replace(INVISIBLE, "")
    .replace(LEFT_RUN, (m) => spaced(m, "<"))
    .replace(RIGHT_RUN, (m) => spaced(m, ">"))
    .replace(SEARCH_TOKEN, "untrusted search content");
}
