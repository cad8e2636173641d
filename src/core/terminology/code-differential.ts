import type { TerminologyCode, ValueSetCoder } from "./valueset-expand.js";

/** Entries of the differential looked up (the rest stay uncoded: a long tail is not worth the calls). */
export const CODED_ENTRIES = 5;

export interface TerminologyNote {
  valueSet: string;
  looked: number;
  coded: number;
  /** Why lookups failed (the entries stay uncoded). */
  note?: string;
}

/**
 * Each leading diagnosis of the differential looked up in the value set, in parallel; an entry
 * keeps a code only when the server returned one. A lookup that fails leaves its entry uncoded
 * and is counted in the note: coding never fails a case.
 */
export async function codeDifferential<D extends { answer: { text: string }; code?: TerminologyCode }>(coder: ValueSetCoder, differential: D[], signal?: AbortSignal): Promise<{ differential: D[]; note: TerminologyNote }> {
  const head = differential.slice(0, CODED_ENTRIES);
  const failures: string[] = [];
  const codes = await Promise.all(
    head.map((d) =>
      coder.code(d.answer.text, signal).catch((err: unknown) => {
        failures.push(err instanceof Error ? err.message : String(err));
        return null;
      }),
    ),
  );
  const out = differential.map((d, i) => (codes[i] ? { ...d, code: codes[i]! } : d));
  const coded = codes.filter(Boolean).length;
  return {
    differential: out,
    note: { valueSet: coder.valueSet, looked: head.length, coded, ...(failures.length ? { note: `${failures.length} lookup(s) failed (${failures[0]!.slice(0, 200)}); those diagnoses are not coded` } : {}) },
  };
}
