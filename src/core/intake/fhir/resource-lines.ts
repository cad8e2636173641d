/** A note line rendered from a FHIR resource starts with its literal reference: `[Observation/bp-1] …`. */
const LINE_REF = /^\[([A-Z][A-Za-z]+\/[A-Za-z0-9\-.]{1,64})\] /;

/** The prefix a note line about `name` starts with. */
export function resourceLinePrefix(name: string): string {
  return `[${name}] `;
}

/**
 * The resource a position of FHIR-rendered notes belongs to: the reference at the start of
 * its line, or of the line a document's indented text hangs under. Null on headers and
 * outside the rendered lines (the question).
 */
export function resourceAt(text: string, offset: number): string | null {
  let start = text.lastIndexOf("\n", Math.max(0, offset - 1)) + 1;
  if (offset === 0) start = 0;
  for (;;) {
    const end = text.indexOf("\n", start);
    const line = text.slice(start, end < 0 ? text.length : end);
    const m = LINE_REF.exec(line);
    if (m) return m[1]!;
    // Only an indented line (a document's text) continues the line above it.
    if (start === 0 || !/^\s/.test(line) || line.trim() === "") return null;
    start = text.lastIndexOf("\n", start - 2) + 1;
  }
}
