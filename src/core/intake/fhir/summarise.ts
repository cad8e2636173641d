import { GROUPS, type Group, type NoteLine } from "./renderers.js";
import { resourceLinePrefix } from "./resource-lines.js";

/** A rendered fact with the resource it came from. */
export interface RenderedLine extends NoteLine {
  name: string;
  type: string;
  /** Position in the bundle: the order of facts that carry no date. */
  order: number;
}

/** How the notes were fitted to the budget, per resource type (what the audit view shows). */
export interface NotesSummary {
  notes: string;
  /** Resources folded into another line: earlier readings of a trend, repeats of one visit or refill, lab panels. */
  summarised: Record<string, number>;
  /** Resources whose line did not fit the budget. */
  leftOut: Record<string, number>;
  /** Reports and documents whose text repeats one already in the notes. */
  duplicates: Record<string, number>;
}

/** Earlier readings shown after the latest value of a vital or lab code. */
const EARLIER_READINGS = 3;
/** Encounters shown one per line; older ones are condensed into the history. */
const RECENT_ENCOUNTERS = 10;

function bump(counts: Record<string, number>, type: string, by = 1): void {
  counts[type] = (counts[type] ?? 0) + by;
}

/** Latest first; facts without a date after the dated ones, in bundle order. */
function newestFirst(a: RenderedLine, b: RenderedLine): number {
  if (a.date && b.date) return a.date < b.date ? 1 : a.date > b.date ? -1 : a.order - b.order;
  return a.date ? -1 : b.date ? 1 : a.order - b.order;
}

/** Document text compared as a reader would: case and spacing do not make two notes different. */
function contentKey(body: string[]): string {
  return body.join(" ").replace(/\s+/g, " ").trim().toLowerCase();
}

/** Lines of one key become the latest line, told how many there were and since when. Linear: one pass to group, one to emit. */
function condense(lines: RenderedLine[], keyOf: (l: RenderedLine) => string | undefined, summarised: Record<string, number>, describe: (rest: RenderedLine[]) => string, scrub: (text: string) => string): RenderedLine[] {
  const byKey = new Map<string, RenderedLine[]>();
  // Each key keeps the place of its first (newest, the input is sorted) line.
  const slots: Array<RenderedLine | RenderedLine[]> = [];
  for (const l of lines) {
    const key = keyOf(l);
    if (key === undefined) {
      slots.push(l);
      continue;
    }
    const list = byKey.get(key);
    if (list) list.push(l);
    else {
      const fresh = [l];
      byKey.set(key, fresh);
      slots.push(fresh);
    }
  }
  return slots.map((slot) => {
    if (!Array.isArray(slot)) return slot;
    const [latest, ...rest] = slot as [RenderedLine, ...RenderedLine[]];
    if (!rest.length) return latest;
    for (const r of rest) bump(summarised, r.type);
    return { ...latest, text: `${latest.text}; ${scrub(describe(rest))}` };
  });
}

function since(rest: RenderedLine[]): string {
  const first = rest.map((r) => r.date).filter(Boolean).sort()[0];
  return first ? ` since ${first.slice(0, 10)}` : "";
}

/** Lines handled between chances to yield the event loop. */
const STEP = 64;

/**
 * The notes within `budget` characters, filled in clinical order (GROUPS): what is true now,
 * then the latest of each measurement with its trend, recent care, documents, history.
 * Within a section the most recent come first, so what the budget cuts is the oldest.
 * Every line still starts with the resource it came from; a trend or condensed line names
 * the latest.
 *
 * A generator that yields between bounded slices of work (STEP lines), so the server reads a
 * large record in slices and the event loop keeps answering.
 */
export function* summariseNotesSteps(input: RenderedLine[], budget: number, scrub: (text: string) => string = (t) => t): Generator<void, NotesSummary> {
  const summarised: Record<string, number> = {};
  const leftOut: Record<string, number> = {};
  const duplicates: Record<string, number> = {};

  const byGroup = new Map<Group, RenderedLine[]>();
  const seenContent = new Set<string>();
  // Reports before documents: where both carry the same note, the first read keeps it.
  const ordered = [...input].sort((a, b) => Object.keys(GROUPS).indexOf(a.group) - Object.keys(GROUPS).indexOf(b.group) || a.order - b.order);
  let step = 0;
  for (const l of ordered) {
    if (++step % STEP === 0) yield;
    if (l.folded) {
      bump(summarised, l.type);
      continue;
    }
    if (l.body?.length) {
      const key = contentKey(l.body);
      if (seenContent.has(key)) {
        bump(duplicates, l.type);
        continue;
      }
      seenContent.add(key);
    }
    const list = byGroup.get(l.group) ?? [];
    list.push(l);
    byGroup.set(l.group, list);
  }

  // Older encounters are history: condensed by kind, after the recent ones.
  const encounters = (byGroup.get("encounters") ?? []).sort(newestFirst);
  if (encounters.length > RECENT_ENCOUNTERS) {
    byGroup.set("encounters", encounters.slice(0, RECENT_ENCOUNTERS));
    byGroup.set("history", [...(byGroup.get("history") ?? []), ...encounters.slice(RECENT_ENCOUNTERS)]);
  }

  const sections: Array<[Group, RenderedLine[]]> = [];
  for (const group of Object.keys(GROUPS) as Group[]) {
    yield;
    let lines = (byGroup.get(group) ?? []).sort(newestFirst);
    if (group === "vitals" || group === "labs" || group === "observations") {
      lines = condense(lines, (l) => l.series?.key, summarised, (rest) => {
        const shown = rest.slice(0, EARLIER_READINGS).map((r) => r.series!.reading);
        return `earlier ${shown.join(", ")}${rest.length > shown.length ? `; ${rest.length + 1} readings${since(rest)}` : ""}`;
      }, scrub);
    } else if (group !== "encounters") {
      lines = condense(lines, (l) => l.condense, summarised, (rest) => `${rest.length + 1} times in all${since(rest)}`, scrub);
    }
    if (lines.length) sections.push([group, lines]);
  }

  // Documents are long and many; a share of the budget stays for the condensed history after them.
  const historyChars = sections.find(([g]) => g === "history")?.[1].reduce((n, l) => n + l.name.length + l.text.length + 4, 0) ?? 0;
  const reserve = Math.min(historyChars + GROUPS.history.length + 3, Math.floor(budget * 0.15));
  const out: string[] = [];
  let used = 0;
  let limit = budget;
  const fits = (s: string) => used + s.length + 1 <= limit;
  const put = (s: string) => {
    out.push(s);
    used += s.length + 1;
  };
  for (const [group, lines] of sections) {
    limit = group === "reports" || group === "documents" || group === "images" ? budget - reserve : budget;
    const header = `${out.length ? "\n" : ""}${GROUPS[group]}:`;
    let opened = false;
    for (const l of lines) {
      if (++step % STEP === 0) yield;
      const head = `${resourceLinePrefix(l.name)}${l.text}`;
      const body = l.body ?? [];
      // A header and at least the line itself must fit; a document's text may be cut short.
      if (!fits(`${opened ? "" : `${header}\n`}${head}`)) {
        bump(leftOut, l.type);
        continue;
      }
      if (!opened) put(header), (opened = true);
      put(head);
      let shown = 0;
      // One document may take at most a quarter of the budget: a long note must not crowd out the rest.
      const docCap = used + Math.max(1000, Math.floor(budget / 4));
      for (const b of body) {
        const tail = `  … (${body.length - shown} more lines not shown)`;
        if (used + b.length + 1 + tail.length + 1 > Math.min(limit, docCap)) break;
        put(b);
        shown++;
      }
      if (shown < body.length) {
        const tail = `  … (${body.length - shown} more lines not shown)`;
        if (fits(tail)) put(tail);
      }
    }
  }
  return { notes: out.join("\n"), summarised, leftOut, duplicates };
}
