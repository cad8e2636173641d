import type { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";

/**
 * The REST API's asynchronous path as a client uses it: `POST /diagnose` with
 * `Prefer: respond-async` (202 and a case id), then the case's event stream until its `final`
 * event, then `GET /cases/{id}` for the stored outcome. Times are the client's own
 * (performance.now()), never the server's clock.
 */
export interface AsyncOutcome {
  caseId: string;
  /** When the 202 arrived. */
  acceptedAt: number;
  /** When the client learnt the case was over (its `final` event, or a terminal GET). */
  terminalAt: number;
  status: string;
  result: DiagnosisResult | null;
  error: unknown;
}

interface CaseView {
  status: string;
  result: DiagnosisResult | null;
  error: unknown;
}

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

export function asyncClient(address: string, apiKey: string, query: string) {
  const auth = { authorization: `Bearer ${apiKey}` };

  const getCase = async (id: string): Promise<CaseView> => {
    const res = await fetch(`${address}/cases/${id}`, { headers: auth });
    if (res.status !== 200) throw new Error(`GET /cases/${id} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    return (await res.json()) as CaseView;
  };

  /**
   * Reads the event stream until `final` and returns when that frame arrived. A stream that ends
   * without one (a connection the server closed, a replica shutting down) is asked about with a
   * GET and, when the case still runs, reopened after the last event seen, as an SSE client would.
   */
  const untilFinal = async (id: string, deadline: number): Promise<number> => {
    let last = 0;
    while (performance.now() < deadline) {
      const res = await fetch(`${address}/cases/${id}/events`, { headers: { ...auth, "last-event-id": String(last) }, signal: AbortSignal.timeout(Math.max(1, Math.ceil(deadline - performance.now()))) });
      if (res.status !== 200) throw new Error(`GET /cases/${id}/events answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let end: number;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const idLine = /^id: (\d+)$/m.exec(frame);
          if (idLine) last = Number(idLine[1]);
          if (/^event: final$/m.test(frame)) {
            const at = performance.now();
            await reader.cancel().catch(() => undefined);
            return at;
          }
        }
      }
      if (TERMINAL.has((await getCase(id)).status)) return performance.now();
    }
    throw new Error(`case ${id} did not finish before the run's deadline`);
  };

  return {
    /** POST one case; resolves with its outcome once it is over (or throws at the deadline). */
    async run(body: string, deadline: number): Promise<AsyncOutcome> {
      const res = await fetch(`${address}/diagnose${query}`, { method: "POST", headers: { ...auth, "content-type": "application/json", prefer: "respond-async" }, body });
      const text = await res.text();
      if (res.status !== 202) throw new Error(`POST /diagnose answered ${res.status}: ${text.slice(0, 300)}`);
      const acceptedAt = performance.now();
      const { caseId } = JSON.parse(text) as { caseId: string };
      const terminalAt = await untilFinal(caseId, deadline);
      const view = await getCase(caseId);
      return { caseId, acceptedAt, terminalAt, status: view.status, result: view.result, error: view.error };
    },
  };
}
