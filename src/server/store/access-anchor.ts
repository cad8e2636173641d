import { z } from "zod";
import { MedmmvError } from "../../core/contracts/errors.js";
import { describeZodIssues } from "../../core/contracts/zod-issues.js";
import type { AccessSigner } from "./access-signing.js";
import type { AccessTrail } from "./roles/access-trail.js";

/**
 * An anchor: every tenant's chain head (last seq and hash) at one moment, signed with the
 * audit key when the service holds one, printed by `medmmv audit anchor` for the operator to
 * keep outside the store (a ticket, WORM storage, a transparency log). `medmmv audit verify
 * --anchor FILE` then proves the trail still holds each anchored event as it was: a trail cut
 * back to before it, or rewritten up to it, fails, key or no key.
 */
const AnchorHead = z.object({
  tenant: z.string(),
  seq: z.number().int().min(1),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  signature: z.string().nullable(),
});
export const AccessAnchorSchema = z.object({
  medmmvAccessAnchor: z.literal(1),
  at: z.string(),
  heads: z.array(AnchorHead),
});
export type AccessAnchor = z.infer<typeof AccessAnchorSchema>;

/** The trail's current heads, each signed with `signer` when given. */
export async function currentAnchor(trail: AccessTrail, signer: AccessSigner | null, at: string): Promise<AccessAnchor> {
  const heads = (await trail.accessHeads()).filter((h) => h.lastSeq > 0);
  return {
    medmmvAccessAnchor: 1,
    at,
    heads: heads.map((h) => {
      const position = { tenant: h.tenant, seq: h.lastSeq, hash: h.lastHash };
      return { ...position, signature: signer ? signer.sign(position) : null };
    }),
  };
}

/**
 * An anchor read back from where the operator kept it. With the key, each head's signature
 * must be the key's (an anchor forged to match a rewritten trail fails here); an anchor made
 * without a key is taken as the operator's own record.
 */
export function parseAnchor(text: string, signer: AccessSigner | null): AccessAnchor {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new MedmmvError("INVALID_INPUT", "the anchor is not JSON: pass the file `medmmv audit anchor` printed, unchanged");
  }
  const parsed = AccessAnchorSchema.safeParse(value);
  if (!parsed.success) throw new MedmmvError("INVALID_INPUT", `the anchor is not one \`medmmv audit anchor\` printed: ${describeZodIssues(parsed.error).message}`);
  if (signer) {
    for (const h of parsed.data.heads) {
      if (h.signature === null) continue;
      const check = signer.verify(h, h.signature);
      if (check !== "valid") throw new MedmmvError("INVALID_INPUT", `the anchor's head for tenant ${JSON.stringify(h.tenant)} (event ${h.seq}) is not signed by this key (${check}): it is not an anchor this service printed`);
    }
  }
  return parsed.data;
}
