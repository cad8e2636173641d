import type { z } from "zod";
import type { CodeableConcept, Coding, Period, Quantity, Range, Ratio } from "./fhir-schemas.js";

type CC = z.infer<typeof CodeableConcept>;
type Qty = z.infer<typeof Quantity>;

/** One line of text: FHIR strings may hold newlines, and a note line must stay one line. */
export function oneLine(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}

function codingText(c: z.infer<typeof Coding>): string | undefined {
  return c.display ?? c.code;
}

/** What a clinician calls a concept: its text, else the first coding's display, else its code. */
export function conceptText(c: CC | undefined): string | undefined {
  if (!c) return undefined;
  const t = c.text ?? c.coding?.map(codingText).find((x) => x !== undefined);
  return t === undefined ? undefined : oneLine(t);
}

export function quantityText(q: Qty | undefined): string | undefined {
  if (!q || q.value === undefined) return undefined;
  const unit = q.unit ?? q.code;
  return `${q.comparator ?? ""}${q.value}${unit ? ` ${unit}` : ""}`;
}

export function rangeText(r: z.infer<typeof Range> | undefined): string | undefined {
  if (!r) return undefined;
  const lo = quantityText(r.low);
  const hi = quantityText(r.high);
  if (lo && hi) {
    // One unit for both ends when they share it: "3.5–5.1 mmol/L".
    const unit = r.low?.unit ?? r.low?.code;
    if (unit && unit === (r.high?.unit ?? r.high?.code) && !r.low?.comparator && !r.high?.comparator) return `${r.low!.value}–${r.high!.value} ${unit}`;
    return `${lo} – ${hi}`;
  }
  if (lo) return `≥ ${lo}`;
  if (hi) return `≤ ${hi}`;
  return undefined;
}

export function ratioText(r: z.infer<typeof Ratio> | undefined): string | undefined {
  if (!r) return undefined;
  const n = quantityText(r.numerator);
  const d = quantityText(r.denominator);
  return n && d ? `${n} / ${d}` : n;
}

/** The day of a FHIR date/dateTime (what a note line shows). */
export function day(dt: string | undefined): string | undefined {
  return dt?.slice(0, 10);
}

export function periodText(p: z.infer<typeof Period> | undefined): string | undefined {
  if (!p) return undefined;
  const s = day(p.start);
  const e = day(p.end);
  if (s && e) return s === e ? s : `${s} to ${e}`;
  if (s) return `from ${s}`;
  if (e) return `until ${e}`;
  return undefined;
}

/** An Observation's (or component's) value[x], rendered; undefined when there is none. */
export interface ValueParts {
  valueQuantity?: Qty | undefined;
  valueCodeableConcept?: CC | undefined;
  valueString?: string | undefined;
  valueBoolean?: boolean | undefined;
  valueInteger?: number | undefined;
  valueRange?: z.infer<typeof Range> | undefined;
  valueRatio?: z.infer<typeof Ratio> | undefined;
  valueDateTime?: string | undefined;
  valuePeriod?: z.infer<typeof Period> | undefined;
  dataAbsentReason?: CC | undefined;
}

export function valueText(v: ValueParts): string | undefined {
  return (
    quantityText(v.valueQuantity) ??
    conceptText(v.valueCodeableConcept) ??
    (v.valueString !== undefined ? oneLine(v.valueString) : undefined) ??
    (v.valueBoolean !== undefined ? (v.valueBoolean ? "yes" : "no") : undefined) ??
    (v.valueInteger !== undefined ? String(v.valueInteger) : undefined) ??
    rangeText(v.valueRange) ??
    ratioText(v.valueRatio) ??
    v.valueDateTime ??
    periodText(v.valuePeriod) ??
    (v.dataAbsentReason ? `not available (${conceptText(v.dataAbsentReason) ?? "no reason given"})` : undefined)
  );
}
