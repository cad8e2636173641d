/**
 * A Bundle's JSON text parsed without holding the event loop for the whole text: one linear
 * scan finds the top-level `entry` array's elements, the envelope and then each element are
 * parsed natively (`parse`), and the loop is yielded to whenever a slice has run `sliceMs`. A
 * 25 MiB body parsed in one `JSON.parse` holds it for hundreds of milliseconds on a busy host.
 *
 * The result is what `parse(text)` gives: anything this does not split cleanly (no top-level
 * object, no `entry` array, `entry` twice, a piece that does not parse) is parsed whole by
 * `parse`, so a malformed body is refused with exactly the error a whole parse gives.
 */
export async function parseBundleInSlices(text: string, parse: (json: string) => unknown, sliceMs = 8): Promise<unknown> {
  let sliceStart = performance.now();
  const breathe = async () => {
    if (performance.now() - sliceStart <= sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    sliceStart = performance.now();
  };
  const split = await splitEntries(text, breathe);
  if (!split) return parse(text);
  try {
    const envelope = parse(`${text.slice(0, split.open + 1)}${text.slice(split.close)}`);
    if (!envelope || typeof envelope !== "object" || Array.isArray(envelope)) return parse(text);
    const entries: unknown[] = [];
    for (const [from, to] of split.elements) {
      entries.push(parse(text.slice(from, to)));
      await breathe();
    }
    (envelope as Record<string, unknown>).entry = entries;
    return envelope;
  } catch {
    return parse(text);
  }
}

/** Characters scanned between looks at the clock. */
const SCAN_STEP = 65_536;

/**
 * Where the top-level object's `entry` array opens and closes, and each element's span
 * (trimmed of whitespace), or null when the text is not shaped so. Strings and escapes are
 * followed so that brackets inside them are not counted.
 */
async function splitEntries(text: string, breathe: () => Promise<void>): Promise<{ open: number; close: number; elements: Array<[number, number]> } | null> {
  let depth = 0;
  let inString = false;
  let stringStart = -1;
  let lastKey: string | null = null;
  let open = -1;
  let close = -1;
  let elementStart = -1;
  let entryKeys = 0;
  const elements: Array<[number, number]> = [];
  const first = text.search(/\S/);
  if (first < 0 || text[first] !== "{") return null;
  for (let i = first; i < text.length; i++) {
    if (i % SCAN_STEP === 0) await breathe();
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: the next character is escaped
      else if (c === 34) {
        inString = false;
        // A key of the top-level object: the string is followed by ':'.
        if (depth === 1) {
          let j = i + 1;
          while (j < text.length && /\s/.test(text[j]!)) j++;
          if (text[j] === ":") {
            lastKey = text.slice(stringStart + 1, i);
            if (lastKey === "entry") entryKeys++;
          }
        }
      }
      continue;
    }
    if (c === 34) {
      inString = true;
      stringStart = i;
      if (depth === 2 && open >= 0 && close < 0 && elementStart < 0) elementStart = i;
      continue;
    }
    if (c === 123 || c === 91) {
      // { or [
      if (depth === 1 && c === 91 && lastKey === "entry" && open < 0) open = i;
      else if (depth === 2 && open >= 0 && close < 0 && elementStart < 0) elementStart = i;
      depth++;
      continue;
    }
    if (c === 125 || c === 93) {
      // } or ]
      depth--;
      if (depth === 1 && c === 93 && open >= 0 && close < 0) {
        // A comma before the closing bracket (`[{…},]`) is not JSON: the whole parse says so.
        if (elementStart < 0 && elements.length) return null;
        if (elementStart >= 0) elements.push([elementStart, trimEnd(text, i)]);
        elementStart = -1;
        close = i;
      }
      continue;
    }
    if (depth === 2 && open >= 0 && close < 0) {
      if (c === 44) {
        // , — with no element before it (`[,` or `,,`) not JSON: the whole parse says so.
        if (elementStart < 0) return null;
        elements.push([elementStart, trimEnd(text, i)]);
        elementStart = -1;
      } else if (elementStart < 0 && !(c === 32 || c === 9 || c === 10 || c === 13)) elementStart = i;
    }
  }
  if (open < 0 || close < 0 || entryKeys !== 1 || depth !== 0) return null;
  return { open, close, elements };
}

function trimEnd(text: string, end: number): number {
  let e = end;
  while (e > 0 && /\s/.test(text[e - 1]!)) e--;
  return e;
}
