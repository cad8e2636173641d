import { z } from "zod";
import { FHIR_ID } from "../../core/intake/fhir/fhir-schemas.js";
import { HOOK } from "./discovery.js";

/** A CDS Hooks 2.0 call, the parts medmmv reads (the rest of the request passes unread). */
export const HookRequest = z.looseObject({
  hook: z.literal(HOOK, { error: `this service answers the ${HOOK} hook` }).describe("The hook that fired"),
  // "A universally unique identifier": any GUID, not only an RFC 4122 one (EHRs make them in many ways).
  hookInstance: z.guid().describe("GUID of this hook call (8-4-4-4-12 hex digits)"),
  fhirServer: z.string().url().optional().describe("Base URL of the EHR's FHIR server (used only when on the allow-list)"),
  fhirAuthorization: z
    .looseObject({
      access_token: z.string().min(1).describe("OAuth 2.0 access token for fhirServer"),
      token_type: z.literal("Bearer"),
      expires_in: z.number().int().describe("Seconds the token lives"),
      scope: z.string(),
      subject: z.string(),
      patient: z.string().optional(),
    })
    .optional()
    .describe("Access to fhirServer for the data not prefetched"),
  context: z.looseObject({
    userId: z.string().min(1).describe("The user in the EHR, e.g. Practitioner/123"),
    patientId: z.string().regex(FHIR_ID, "must be a FHIR id").describe("The patient in context"),
    encounterId: z.string().optional(),
  }),
  prefetch: z.record(z.string(), z.unknown()).optional().describe("Prefetched FHIR data, keyed as in the discovery document (null: not available)"),
})
  // 2.0.1 §HTTP request: "If fhirAuthorization is provided, this field is REQUIRED": a token is for a server.
  .refine((call) => !call.fhirAuthorization || call.fhirServer !== undefined, { path: ["fhirServer"], message: "fhirServer is required when fhirAuthorization is sent" });
export type HookRequest = z.infer<typeof HookRequest>;

/** CDS Hooks 2.0.1 §card: the summary is a "<140-character" sentence. */
export const CARD_SUMMARY_MAX = 139;

const Link = z.object({ label: z.string(), url: z.string().url(), type: z.enum(["absolute", "smart"]) });

/** A CDS Hooks 2.0 card, as medmmv sends it. */
export const Card = z
  .object({
    uuid: z.string().uuid().optional(),
    summary: z.string().max(CARD_SUMMARY_MAX).describe("One sentence, shorter than 140 characters"),
    detail: z.string().optional().describe("GitHub-flavoured Markdown"),
    indicator: z.enum(["info", "warning", "critical"]),
    source: z.object({ label: z.string(), url: z.string().url().optional(), topic: z.object({ code: z.string(), display: z.string().optional(), system: z.string().optional() }).optional() }),
    links: z.array(Link).optional(),
    overrideReasons: z
      .array(z.object({ code: z.string(), system: z.string().optional(), display: z.string().optional() }))
      .optional()
      .describe("Reasons the EHR may offer a clinician who overrides the card, returned in feedback (2.0.1)"),
  })
  .describe("CdsCard");
export type Card = z.infer<typeof Card>;

export const HookResponse = z.object({ cards: z.array(Card) }).describe("CdsHookResponse");
