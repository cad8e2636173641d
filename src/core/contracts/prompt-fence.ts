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
 * Characters a model may read as `<` or `>`, by how many they look like: every character
 * whose Unicode name makes it a less-than or greater-than sign, an angle bracket or angle
 * quotation mark (guillemets), or a left- or right-pointing arrowhead, triangle or pointer
 * (the mathematical, guillemet and arrow families, with their full-width, small and CJK
 * forms), "DOUBLE"/"MUCH" ones counting two and "TRIPLE"/"VERY MUCH" three. Generated from
 * Unicode 14 names (Python's unicodedata) by:
 *   name matches /LESS-THAN|GREATER-THAN|ANGLE BRACKET|ANGLE QUOTATION|ARROWHEAD|POINTING (ANGLE|TRIANGLE|POINTER|CURVED ANGLE)/,
 *   not /\bARROW\b|VERTICAL|UP|DOWN/, one direction only (LESS-THAN|LEFT xor GREATER-THAN|RIGHT),
 *   not a combining mark or format character;
 * plus the look-alikes no name gives away (Canadian syllabics PA/PO, ᐸ ᐳ).
 */
const LEFT_1 = "\u003C\u02C2\u02F1\u2039\u2264\u2266\u2268\u226E\u2270\u2272\u2274\u22D6\u22DC\u22E6\u2329\u2343\u23F4\u25C0\u25C1\u25C4\u25C5\u276C\u276E\u2770\u27E8\u2991\u2993\u29C0\u29FC\u2A79\u2A7B\u2A7D\u2A7F\u2A81\u2A85\u2A87\u2A89\u2A8D\u2A95\u2A97\u2A99\u2A9B\u2A9D\u2A9F\u2AA6\u2AA8\u2AF9\u2B98\u2B9C\u2BC7\u3008\uFE64\uFF1C\u{1F890}\u1438";
const LEFT_2 = "\u00AB\u226A\u27EA\u2AA1\u2AA3\u300A";
const LEFT_3 = "\u22D8\u2AF7";
const RIGHT_1 = "\u003E\u02C3\u02F2\u203A\u2265\u2267\u2269\u226F\u2271\u2273\u2275\u22D7\u22DD\u22E7\u232A\u2344\u2369\u23F5\u25B6\u25B7\u25BA\u25BB\u276D\u276F\u2771\u27A2\u27A3\u27A4\u27E9\u2992\u2994\u29C1\u29FD\u2A7A\u2A7C\u2A7E\u2A80\u2A82\u2A86\u2A88\u2A8A\u2A8E\u2A96\u2A98\u2A9A\u2A9C\u2A9E\u2AA0\u2AA7\u2AA9\u2AFA\u2B9A\u2B9E\u2BC8\u2E16\u3009\uFE65\uFF1E\u{1F892}\u1433";
const RIGHT_2 = "\u00BB\u226B\u27EB\u2AA2\u300B";
const RIGHT_3 = "\u22D9\u2AF8";
export const LEFT_ANGLES = LEFT_1 + LEFT_2 + LEFT_3;
export const RIGHT_ANGLES = RIGHT_1 + RIGHT_2 + RIGHT_3;

/** How many brackets each look-alike reads as. */
const WEIGHT = new Map<string, number>(
  ([[LEFT_1, 1], [LEFT_2, 2], [LEFT_3, 3], [RIGHT_1, 1], [RIGHT_2, 2], [RIGHT_3, 3]] as const).flatMap(([chars, w]) => Array.from(chars, (c) => [c, w] as [string, number])),
);

/**
 * Invisible characters that could hide a run of brackets from a check but not from the model:
 * format characters (zero-width space and joiners, word joiner, BOM, bidi controls, soft
 * hyphen), variation selectors, the combining grapheme joiner and the Hangul fillers.
 */
const INVISIBLE = /[\p{Cf}\uFE00-\uFE0F\u{E0100}-\u{E01EF}\u034F\u115F\u1160\u3164\uFFA0]/gu;

/** A run of angle look-alikes of one direction, each with any combining marks drawn on it (neutralised when it reads as three or more). */
const LEFT_RUN = new RegExp(`(?:[${LEFT_ANGLES}]\\p{M}*){1,}`, "gu");
const RIGHT_RUN = new RegExp(`(?:[${RIGHT_ANGLES}]\\p{M}*){1,}`, "gu");

/** `UNTRUSTED_SEARCH_CONTENT`, its letters in ASCII or full-width, with any separators between the words. */
const letter = (c: string): string => `[${c}${c.toLowerCase()}${String.fromCharCode(c.charCodeAt(0) + 0xfee0)}${String.fromCharCode(c.toLowerCase().charCodeAt(0) + 0xfee0)}]`;
const word = (w: string): string => Array.from(w, letter).join("");
const SEARCH_TOKEN = new RegExp(`${word("UNTRUSTED")}[\\s_\\-\\uFF3F\\uFF0D]*${word("SEARCH")}[\\s_\\-\\uFF3F\\uFF0D]*${word("CONTENT")}`, "gu");

/** Spaced ASCII brackets, one per bracket the run reads as: readable, and no longer a delimiter. A run that reads as fewer than three is kept as written. */
const spaced = (run: string, bracket: "<" | ">"): string => {
  const chars = Array.from(run.replace(/\p{M}/gu, ""));
  const reads = chars.reduce((n, c) => n + (WEIGHT.get(c) ?? 1), 0);
  return reads < 3 ? run : Array.from({ length: reads }, () => bracket).join(" ");
};

/**
 * Makes untrusted text unable to open or close a fence: drops invisible characters, breaks
 * every run of angle brackets or look-alikes that reads as three or more into spaced
 * ASCII brackets (`＞＞＞`, `≫>`, `⋙`, `⫸` → `> > >`), and renames the search-content fence's token. Everything else is kept
 * as written.
 */
export function neutraliseDelimiters(text: string): string {
  return text
    .replace(INVISIBLE, "")
    .replace(LEFT_RUN, (m) => spaced(m, "<"))
    .replace(RIGHT_RUN, (m) => spaced(m, ">"))
    .replace(SEARCH_TOKEN, "untrusted search content");
}
