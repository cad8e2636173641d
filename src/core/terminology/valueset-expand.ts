/**
 * Coding a diagnosis wording against a FHIR terminology server: `GET [base]/ValueSet/$expand?url=
 * [value set]&filter=[wording]&count=…` (FHIR R4, ValueSet $expand: `filter` is a text filter the
 * server applies to the codes' displays; the result is a ValueSet whose `expansion.contains`
 * lists the matching codes). The first code the server returns is kept — never one a model
 * wrote — and a failure codes nothing.
 */
import { z } from "zod";

import { readCappedBody } from "../net/read-capped-body.js";

/** The terminology server failed (caught by the caller, which codes nothing and says so). */
export class TerminologyError extends Error {
  override name = "TerminologyError";
}

export interface TerminologyCode {
  system: string;
  code: string;
  display: string;
}

/** Codes asked for per lookup: the first is kept; a few more let the server rank. */
const EXPAND_COUNT = 5;
/** A ValueSet expansion of a few codes is small: more is a broken or hostile server. */
const MAX_BODY_BYTES = 1_000_000;

const Expansion = z.object({
  resourceType: z.literal("ValueSet"),
  expansion: z.object({
    contains: z.array(z.object({ system: z.string().optional(), code: z.string().optional(), display: z.string().optional() })).optional(),
  }),
});

export class ValueSetCoder {
  constructor(private readonly o: { url: string; valueSet: string; timeoutMs: number }) {}

  get valueSet(): string {
    return this.o.valueSet;
  }

  /** The first code of the value set the server finds for `wording`, or null when it finds none; throws when the server fails. */
  async code(wording: string, signal?: AbortSignal): Promise<TerminologyCode | null> {
    const q = new URLSearchParams({ url: this.o.valueSet, filter: wording.replace(/\s+/g, " ").trim().slice(0, 200), count: String(EXPAND_COUNT) });
    const timeout = AbortSignal.timeout(this.o.timeoutMs);
    const res = await fetch(`${this.o.url}/ValueSet/$expand?${q}`, {
      headers: { accept: "application/fhir+json" },
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const body = await readCappedBody(res, MAX_BODY_BYTES);
    if (!res.ok) throw new TerminologyError(`the terminology server answered ${res.status} to ValueSet/$expand`);
    if (body === null) throw new TerminologyError(`the terminology server's expansion is over ${MAX_BODY_BYTES} bytes`);
    let parsed: z.infer<typeof Expansion>;
    try {
      parsed = Expansion.parse(JSON.parse(body.toString("utf8")));
    } catch {
      throw new TerminologyError("the terminology server's answer is not a ValueSet expansion");
    }
    const hit = (parsed.expansion.contains ?? []).find((c) => c.system && c.code);
    return hit ? { system: hit.system!, code: hit.code!, display: hit.display ?? hit.code! } : null;
  }
}
