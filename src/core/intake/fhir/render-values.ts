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

/**
 * Decimals a measurement in this unit is read to on a chart (UCUM codes and the units
 * exporters write). A computed value such as Synthea's "185.8289545670521 cm" carries
 * digits no instrument measured; they only cost the model tokens.
 */
const UNIT_DECIMALS: Record<string, number> = {
  cm: 1, m: 2, mm: 0, kg: 1, g: 0, "[lb_av]": 1, lb: 1, "[in_i]": 1, in: 1, "kg/m2": 1, "kg/m^2": 1,
  "mm[Hg]": 0, mmhg: 0, "/min": 0, "{beats}/min": 0, "{breaths}/min": 0, "beats/min": 0, "breaths/min": 0,
  cel: 1, "°c": 1, "[degf]": 1, "°f": 1, "%": 1, "mg/dl": 1, "mmol/l": 1, "g/dl": 1, "g/l": 0, "mg/l": 1,
  "meq/l": 0, "u/l": 0, "iu/l": 0, "10*3/ul": 1, "10*6/ul": 2, "10*9/l": 1, "10*12/l": 2, fl: 1, pg: 1,
  "ng/ml": 2, "pg/ml": 0, "ml/min/{1.73_m2}": 0, "ml/min": 0, "{score}": 0, "[ppm]": 0, "umol/l": 0, s: 1, ms: 0,
};

/** Digits after the decimal point of a JSON number as written. */
function decimalsOf(n: number): number {
  const s = String(n);
  if (/e/i.test(s)) return 20;
  const dot = s.indexOf(".");
  return dot < 0 ? 0 : s.length - dot - 1;
}

/**
 * A value to the precision it justifies: as the source wrote it when that is two decimals
 * or fewer (a measured value), else to the unit's chart precision, else to four
 * significant figures (an unknown unit: never fewer digits than the integer part).
 */
export function roundedValue(value: number, unit: string | undefined): string {
  if (!Number.isFinite(value) || decimalsOf(value) <= 2) return String(value);
  const d = unit === undefined ? undefined : UNIT_DECIMALS[unit.toLowerCase()];
  if (d !== undefined) return String(Number(value.toFixed(d)));
  const intDigits = Math.max(1, Math.floor(Math.log10(Math.abs(value) || 1)) + 1);
  return String(Number(value.toFixed(Math.max(0, 4 - intDigits))));
}

export function quantityText(q: Qty | undefined): string | undefined {
  if (!q || q.value === undefined) return undefined;
  const unit = q.unit ?? q.code;
  return `${q.comparator ?? ""}${roundedValue(q.value, q.code ?? q.unit)}${unit ? ` ${unit}` : ""}`;
}

export function rangeText(r: z.infer<typeof Range> | undefined): string | undefined {
  if (!r) return undefined;
  const lo = quantityText(r.low);
  const hi = quantityText(r.high);
  if (lo && hi) {
    // One unit for both ends when they share it: "3.5–5.1 mmol/L".
    const unit = r.low?.unit ?? r.low?.code;
    if (unit && unit === (r.high?.unit ?? r.high?.code) && !r.low?.comparator && !r.high?.comparator) return `${roundedValue(r.low!.value!, unit)}–${roundedValue(r.high!.value!, unit)} ${unit}`;
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
