import { createWriteStream, readFileSync } from "node:fs";
import { once } from "node:events";
import type { Writable } from "node:stream";
import { loadConfig } from "../core/config.js";
import { describeError, MedmmvError } from "../core/contracts/errors.js";
import { openStore } from "../server/store/open-store.js";
import { verifyAccessTrail } from "../server/store/verify-access-trail.js";
import { accessSigner, type AccessSigner } from "../server/store/access-signing.js";
import type { CaseStore } from "../server/store/case-store.js";
import { currentAnchor, parseAnchor } from "../server/store/access-anchor.js";
import { toAuditEvent } from "../server/http/audit-event-fhir.js";
import { EXIT, exitCodeFor } from "./cli-args.js";

/**
 * `medmmv audit verify [--anchor FILE]`: walks every tenant's access-trail chain, checking each
 * signature with MEDMMV_AUDIT_SIGNING_KEY when it is set, and (with --anchor) that the heads an
 * earlier `medmmv audit anchor` printed are still in the trail as they were. Exit 1 naming
 * every break.
 */
export async function auditVerifyCommand(opts: { anchor?: string } = {}): Promise<number> {
  return withTrail("verify", async (store, signer) => {
    const anchor = opts.anchor ? parseAnchor(readAnchorFile(opts.anchor), signer) : null;
    const v = await verifyAccessTrail(store, { signer, anchor });
    const chains = `${v.events} events in ${v.tenants} tenant chain${v.tenants === 1 ? "" : "s"} (${store.backend})`;
    const keyed = signer
      ? `, signatures checked with key ${signer.algorithm}:${signer.keyId}`
      : "; signatures NOT checked (MEDMMV_AUDIT_SIGNING_KEY unset): the chain shows the rows agree with each other, not that the service wrote them";
    const anchored = anchor ? `, ${v.anchored} of ${anchor.heads.length} anchored heads found as anchored` : "";
    if (v.ok) {
      process.stdout.write(`medmmv audit verify: the access trail holds: ${chains}${keyed}${anchored}\n`);
      return EXIT.ok;
    }
    for (const b of v.breaks) process.stderr.write(`medmmv audit verify: BROKEN at event ${b.seq} of tenant ${JSON.stringify(b.tenant)}: ${b.problem}\n`);
    if (v.breakCount > v.breaks.length) process.stderr.write(`medmmv audit verify: … and ${v.breakCount - v.breaks.length} more breaks\n`);
    process.stderr.write(`medmmv audit verify: ${v.breakCount} break${v.breakCount === 1 ? "" : "s"} in ${chains}${keyed}${anchored}\n`);
    return EXIT.failed;
  });
}

/** The store of the environment and the audit key's signer (null without MEDMMV_AUDIT_SIGNING_KEY), for one `medmmv audit` command; errors as its exit code. */
async function withTrail(command: string, run: (store: CaseStore, signer: AccessSigner | null) => Promise<number>): Promise<number> {
  try {
    const config = loadConfig().store;
    const signer = config.auditSigningKey ? accessSigner(config.auditSigningKey) : null;
    const store = await openStore(config);
    try {
      return await run(store, signer);
    } finally {
      await store.close();
    }
  } catch (err) {
    process.stderr.write(`medmmv audit ${command}: ${describeError(err).message}\n`);
    return exitCodeFor(err);
  }
}

function readAnchorFile(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new MedmmvError("INVALID_INPUT", `--anchor: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

/**
 * `medmmv audit anchor`: every tenant's current chain head, signed with MEDMMV_AUDIT_SIGNING_KEY
 * when set, as one JSON document on stdout, for the operator to keep outside the store and
 * give back to `medmmv audit verify --anchor`.
 */
export async function auditAnchorCommand(): Promise<number> {
  return withTrail("anchor", async (store, signer) => {
    const anchor = await currentAnchor(store, signer, new Date().toISOString());
    process.stdout.write(`${JSON.stringify(anchor, null, 2)}\n`);
    if (!signer) process.stderr.write("medmmv audit anchor: unsigned (MEDMMV_AUDIT_SIGNING_KEY unset): keep it where the store's writers cannot change it\n");
    return EXIT.ok;
  });
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
