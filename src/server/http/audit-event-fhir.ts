/**
 * Access-trail events as FHIR R4 AuditEvents shaped as IHE Basic Audit Log Patterns (BALP)
 * asks of a RESTful access: `type` rest, `subtype` the FHIR restful interaction, `action`
 * C/R/D, the caller as the requesting agent, the client as the Source Role ID agent (with
 * its network address) and this service as the Destination Role ID agent, `source` this
 * application server, and `entity` the case (by its id and its URL) and the request
 * (X-Request-Id). medmmv's own action code rides along as a second subtype, and the chain's
 * hashes as extensions, so a SIEM can check the chain too. No case content is in an event.
 */
import type { AccessEvent } from "../store/case-store.js";

const BALP = "https://profiles.ihe.net/ITI/BALP/StructureDefinition/IHE.BasicAudit";
const DCM = "http://dicom.nema.org/resources/ontology/DCM";
export const MEDMMV_ACTION_SYSTEM = "urn:medmmv:access-action";
const EXT = "urn:medmmv:fhir:StructureDefinition";

type Interaction = { profile: "Create" | "Read" | "Delete" | "Query"; code: string; display: string; action: "C" | "R" | "D" | "E" };
const CREATE: Interaction = { profile: "Create", code: "create", display: "create", action: "C" };
const READ: Interaction = { profile: "Read", code: "read", display: "read", action: "R" };
const INTERACTIONS: Record<string, Interaction> = {
  create: CREATE,
  "view-link": CREATE,
  delete: { profile: "Delete", code: "delete", display: "delete", action: "D" },
  purge: { profile: "Delete", code: "delete", display: "delete", action: "D" },
  search: { profile: "Query", code: "search-type", display: "search type", action: "E" },
  feedback: CREATE,
  "audit-link": CREATE,
  "audit-read": { profile: "Query", code: "search-type", display: "search type", action: "E" },
};

const OUTCOME: Record<AccessEvent["outcome"], string> = { success: "0", denied: "4", failed: "8" };

const coding = (system: string, code: string, display?: string) => ({ system, code, ...(display ? { display } : {}) });

function requestor(e: AccessEvent) {
  const who =
    e.actor.type === "ehr"
      ? { identifier: { system: e.actor.id, value: e.actor.sub ?? e.actor.id }, display: `EHR ${e.actor.id}` }
      : e.actor.type === "link"
        ? { identifier: { system: "urn:medmmv:view-link", value: e.actor.id }, display: `view link ${e.actor.id} (made by ${e.actor.sub ?? "?"})` }
        : e.actor.type === "system"
          ? { identifier: { system: "urn:medmmv:service", value: e.actor.id }, display: "medmmv" }
          : { identifier: { system: "urn:medmmv:api-key", value: e.actor.id }, display: `API key ${e.actor.id}` };
  return {
    type: { coding: [coding("http://terminology.hl7.org/CodeSystem/v3-ParticipationType", "IRCP", "information recipient")] },
    who,
    ...(e.actor.type === "ehr" && e.actor.sub ? { altId: e.actor.sub } : {}),
    requestor: true,
  };
}

export function toAuditEvent(e: AccessEvent, caseUrl: (id: string) => string) {
  const i = INTERACTIONS[e.action] ?? READ;
  const agents: unknown[] = [requestor(e)];
  if (e.client) agents.push({ type: { coding: [coding(DCM, "110153", "Source Role ID")] }, who: { display: "client" }, requestor: false, network: { address: e.client, type: "2" } });
  agents.push({ type: { coding: [coding(DCM, "110152", "Destination Role ID")] }, who: { display: "medmmv" }, requestor: false });
  const entity: unknown[] = [];
  if (e.caseId)
    entity.push({
      what: { reference: caseUrl(e.caseId), identifier: { system: "urn:medmmv:case", value: e.caseId } },
      type: coding("http://terminology.hl7.org/CodeSystem/audit-entity-type", "2", "System Object"),
      role: coding("http://terminology.hl7.org/CodeSystem/object-role", "4", "Domain Resource"),
    });
  if (e.requestId) entity.push({ what: { identifier: { value: e.requestId } }, type: coding("https://profiles.ihe.net/ITI/BALP/CodeSystem/BasicAuditEntityType", "XrequestId", "X-Request-Id") });
  return {
    resourceType: "AuditEvent" as const,
    id: `ae-${e.hash.slice(0, 40)}`,
    meta: { profile: [`${BALP}.${i.profile}`] },
    extension: [
      { url: `${EXT}/access-trail-tenant`, valueString: e.tenant },
      { url: `${EXT}/access-trail-seq`, valueInteger: e.seq },
      { url: `${EXT}/access-trail-hash`, valueString: e.hash },
      { url: `${EXT}/access-trail-prev-hash`, valueString: e.prevHash },
    ],
    type: coding("http://terminology.hl7.org/CodeSystem/audit-event-type", "rest", "Restful Operation"),
    subtype: [coding("http://hl7.org/fhir/restful-interaction", i.code, i.display), coding(MEDMMV_ACTION_SYSTEM, e.action)],
    action: i.action,
    recorded: e.at,
    outcome: OUTCOME[e.outcome],
    ...(e.outcome === "success" ? {} : { outcomeDesc: `${e.outcome}${typeof e.detail.status === "number" ? ` (HTTP ${e.detail.status})` : ""}` }),
    agent: agents,
    source: { site: e.tenant, observer: { display: "medmmv" }, type: [coding("http://terminology.hl7.org/CodeSystem/security-source-type", "4", "Application Server")] },
    ...(entity.length ? { entity } : {}),
  };
}

/** A FHIR searchset Bundle of AuditEvents, with the next page's link when there is one. */
export function auditEventBundle(events: AccessEvent[], caseUrl: (id: string) => string, selfUrl: string, nextUrl: string | null) {
  return {
    resourceType: "Bundle" as const,
    type: "searchset" as const,
    link: [{ relation: "self", url: selfUrl }, ...(nextUrl ? [{ relation: "next", url: nextUrl }] : [])],
    entry: events.map((e) => ({ fullUrl: `urn:medmmv:audit-event:${e.hash}`, resource: toAuditEvent(e, caseUrl), search: { mode: "match" as const } })),
  };
}
