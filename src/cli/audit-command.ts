import { createWriteStream } from "node:fs";
import { once } from "node:events";
import type { Writable } from "node:stream";
import { loadConfig } from "../core/config.js";
import { describeError, MedmmvError } from "../core/contracts/errors.js";
import { openStore } from "../server/store/open-store.js";
import { verifyAccessTrail } from "../server/store/verify-access-trail.js";
import { toAuditEvent } from "../server/http/audit-event-fhir.js";
import { EXIT, exitCodeFor } from "./cli-args.js";

/** `medmmv audit verify`: walks every tenant's access-trail chain; exit 1 naming the first break. */
export async function auditVerifyCommand(): Promise<number> {
  try {
    const store = await openStore(loadConfig().store);
    try {
      const v = await verifyAccessTrail(store);
      if (v.ok) {
        process.stdout.write(`medmmv audit verify: the access trail holds: ${v.events} events in ${v.tenants} tenant chain${v.tenants === 1 ? "" : "s"} (${store.backend})\n`);
        return EXIT.ok;
      }
      const b = v.firstBreak!;
      process.stderr.write(`medmmv audit verify: BROKEN at event ${b.seq} of tenant ${JSON.stringify(b.tenant)}: ${b.problem}\n`);
      return EXIT.failed;
    } finally {
      await store.close();
    }
  } catch (err) {
    process.stderr.write(`medmmv audit verify: ${describeError(err).message}\n`);
    return exitCodeFor(err);
  }
}

function instant(name: string, v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new MedmmvError("INVALID_INPUT", `--${name} must be an ISO 8601 date or instant, e.g. 2026-11-01 or 2026-11-01T00:00:00Z`);
  return new Date(t).toISOString();
}

/**
 * `medmmv audit export --from --to [--out file]`: every tenant's access events recorded in
 * [from, to) as FHIR AuditEvents, one JSON object a line (NDJSON), oldest first per tenant,
 * for a SIEM. Streams page by page, so memory does not grow with the trail.
 */
export async function auditExportCommand(opts: { from?: string; to?: string; out?: string; tenant?: string }): Promise<number> {
  let out: Writable = process.stdout;
  try {
    const from = instant("from", opts.from);
    const to = instant("to", opts.to);
    const config = loadConfig();
    const base = config.cds.publicUrl ?? "";
    const store = await openStore(config.store);
    let n = 0;
    try {
      if (opts.out) out = createWriteStream(opts.out, { flags: "w" });
      let cursor: string | null = null;
      do {
        const page: Awaited<ReturnType<typeof store.listAccess>> = await store.listAccess({ tenant: opts.tenant ?? null, from, to, cursor, limit: 1000 });
        for (const e of page.items) {
          if (!out.write(`${JSON.stringify(toAuditEvent(e, (id) => `${base}/cases/${encodeURIComponent(id)}`))}\n`)) await once(out, "drain");
          n++;
        }
        cursor = page.nextCursor;
      } while (cursor);
    } finally {
      await store.close();
      if (out !== process.stdout) await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    }
    process.stderr.write(`medmmv audit export: ${n} AuditEvents${opts.out ? ` written to ${opts.out}` : ""}\n`);
    return EXIT.ok;
  } catch (err) {
    process.stderr.write(`medmmv audit export: ${describeError(err).message}\n`);
    return exitCodeFor(err);
  }
}
