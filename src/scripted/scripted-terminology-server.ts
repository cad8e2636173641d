/**
 * A scripted FHIR terminology server on 127.0.0.1 (random port) for tests and the demo:
 * `GET /ValueSet/$expand?url=…&filter=…&count=…` answered as the FHIR R4 specification describes
 * the operation — a ValueSet resource whose `expansion` lists the codes matching the text
 * filter (here: every word of the filter starts a word of the code's display or of one of its
 * designations) — and an OperationOutcome for a value set it does not know (404) or a request
 * without `url` (400). `setDown(true)` answers 503, as a server in maintenance does.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";

export interface ScriptedConcept {
  code: string;
  display: string;
  /** Other designations the filter matches (synonyms, abbreviations). */
  designations?: string[];
}

export interface ScriptedValueSet {
  url: string;
  system: string;
  concepts: ScriptedConcept[];
}

/**
 * Two SNOMED CT clinical findings for the tests' STEMI case, in the default value set of
 * MEDMMV_TERMINOLOGY_VALUESET (SNOMED CT clinical findings). Test data: a handful of concepts
 * with the designations the tests filter by, not a copy of SNOMED CT.
 */
export const SCRIPTED_CLINICAL_FINDINGS: ScriptedValueSet = {
  url: "http://snomed.info/sct?fhir_vs=isa/404684003",
  system: "http://snomed.info/sct",
  concepts: [
    { code: "73795002", display: "Acute myocardial infarction of inferior wall", designations: ["Inferior STEMI", "Inferior wall MI", "Inferior myocardial infarction"] },
    { code: "15555002", display: "Acute pericarditis" },
    { code: "233604007", display: "Pneumonia" },
  ],
};

export interface ScriptedTerminology {
  /** e.g. http://127.0.0.1:41234/fhir */
  baseUrl: string;
  /** Requests received, in order (path and query). */
  requests: string[];
  setDown(down: boolean): void;
  close(): Promise<void>;
}

const words = (s: string) => s.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);

function matches(concept: ScriptedConcept, filter: string): boolean {
  const want = words(filter);
  if (want.length === 0) return true;
  return [concept.display, ...(concept.designations ?? [])].some((text) => {
    const have = words(text);
    return want.every((w) => have.some((h) => h.startsWith(w)));
  });
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/fhir+json; charset=utf-8" }).end(JSON.stringify(body));
}

function outcome(code: string, diagnostics: string) {
  return { resourceType: "OperationOutcome", issue: [{ severity: "error", code, diagnostics }] };
}

export async function startScriptedTerminology(valueSets: ScriptedValueSet[] = [SCRIPTED_CLINICAL_FINDINGS]): Promise<ScriptedTerminology> {
  let down = false;
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    requests.push(`${url.pathname}${url.search}`);
    if (down) return send(res, 503, outcome("transient", "terminology server in maintenance"));
    if (req.method !== "GET" || url.pathname !== "/fhir/ValueSet/$expand") return send(res, 404, outcome("not-supported", `no operation at ${url.pathname}`));
    const vsUrl = url.searchParams.get("url");
    if (!vsUrl) return send(res, 400, outcome("required", "$expand needs the value set's url"));
    const vs = valueSets.find((v) => v.url === vsUrl);
    if (!vs) return send(res, 404, outcome("not-found", `value set ${vsUrl} is not known to this server`));
    const filter = url.searchParams.get("filter") ?? "";
    const count = Number(url.searchParams.get("count") ?? "100");
    const hits = vs.concepts.filter((c) => matches(c, filter));
    send(res, 200, {
      resourceType: "ValueSet",
      url: vs.url,
      status: "active",
      expansion: {
        identifier: `urn:uuid:${randomUUID()}`,
        timestamp: new Date().toISOString(),
        total: hits.length,
        offset: 0,
        parameter: [{ name: "filter", valueString: filter }],
        contains: hits.slice(0, Number.isFinite(count) && count >= 0 ? count : 100).map((c) => ({ system: vs.system, code: c.code, display: c.display })),
      },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/fhir`,
    requests,
    setDown: (d) => void (down = d),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
