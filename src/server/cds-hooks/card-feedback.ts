/**
 * CDS Hooks 2.0.1 feedback (§Feedback): what the clinician did with a card. A result card's
 * `uuid` is the UUID of its case's id (`case-<uuid>`), so feedback finds its case without a
 * table of issued cards, and the same record's card keeps one uuid however often it is shown.
 * An override may name one of the card's `overrideReasons`.
 */
import { z } from "zod";

const CASE_ID = /^case-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

/** The uuid of the card of case `caseId`; null for an id that is not `case-<uuid>` (only local runs name their own). */
export function cardUuidOfCase(caseId: string): string | null {
  return CASE_ID.exec(caseId)?.[1]?.toLowerCase() ?? null;
}

/** The case a card uuid stands for. */
export function caseOfCardUuid(uuid: string): string {
  return `case-${uuid.toLowerCase()}`;
}

export const OVERRIDE_REASON_SYSTEM = "urn:medmmv:cds-override-reason";

/** The reasons a clinician may give for overriding medmmv's card (sent as the card's overrideReasons). */
export const OVERRIDE_REASONS = [
  { system: OVERRIDE_REASON_SYSTEM, code: "disagree-diagnosis", display: "Disagree with the suggested diagnosis" },
  { system: OVERRIDE_REASON_SYSTEM, code: "evidence-insufficient", display: "The evidence shown is not enough" },
  { system: OVERRIDE_REASON_SYSTEM, code: "already-addressed", display: "Already considered or addressed" },
  { system: OVERRIDE_REASON_SYSTEM, code: "not-relevant", display: "Not relevant to this patient now" },
] as const;

const Coding = z.looseObject({ code: z.string().min(1).max(200), system: z.string().max(500).optional(), display: z.string().max(500).optional() });

const Feedback = z
  .looseObject({
    card: z.guid().describe("The uuid of the card the user acted on"),
    outcome: z.enum(["accepted", "overridden"]),
    acceptedSuggestions: z.array(z.looseObject({ id: z.string().max(200) })).max(100).optional(),
    overrideReason: z
      .looseObject({
        reason: Coding.optional().describe("One of the card's overrideReasons"),
        userComment: z.string().max(2000).optional().describe("Free text; not stored (it may name the patient)"),
      })
      .optional(),
    outcomeTimestamp: z.iso.datetime({ offset: true }).describe("When the user acted (ISO 8601 instant)"),
  })
  // 2.0.1: overrideReason only with overridden, acceptedSuggestions only with accepted.
  .refine((f) => f.outcome === "overridden" || f.overrideReason === undefined, { path: ["overrideReason"], message: "overrideReason is only for an overridden card" })
  .refine((f) => f.outcome === "accepted" || f.acceptedSuggestions === undefined, { path: ["acceptedSuggestions"], message: "acceptedSuggestions are only for an accepted card" })
  .refine((f) => !f.overrideReason?.reason || OVERRIDE_REASONS.some((r) => r.code === f.overrideReason!.reason!.code && (f.overrideReason!.reason!.system ?? r.system) === r.system), {
    path: ["overrideReason", "reason"],
    message: `the reason must be one of the card's overrideReasons (${OVERRIDE_REASON_SYSTEM}: ${OVERRIDE_REASONS.map((r) => r.code).join(", ")})`,
  });
export type Feedback = z.infer<typeof Feedback>;

export const FeedbackRequest = z.looseObject({ feedback: z.array(Feedback).min(1).max(50) }).describe("CdsFeedback");

/** The reason of an override in words, as the trail and the pages show it. */
export function overrideReasonText(f: Feedback): string | null {
  const code = f.overrideReason?.reason?.code;
  if (!code) return null;
  return OVERRIDE_REASONS.find((r) => r.code === code)?.display ?? code;
}

/** "accepted" or "overridden: <reason>", for the trail table, the audit view and the auditor pages. */
export function feedbackText(detail: { outcome?: unknown; reason?: unknown }): string {
  const outcome = String(detail.outcome ?? "");
  return outcome === "overridden" && typeof detail.reason === "string" && detail.reason ? `overridden: ${detail.reason}` : outcome;
}
