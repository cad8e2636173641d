import { withEhrPacsToken } from "../../../core/intake/dicom/imaging-study.js";
import cors from "@fastify/cors";
import { createHash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { bundleToCaseYielding, isNoClinicalFactsRefusal } from "../../../core/intake/fhir/bundle-to-case.js";
import { describeZodIssues } from "../../../core/contracts/zod-issues.js";
import { ClinicalCase } from "../../../core/contracts/clinical-case.js";
import { resultCard, startedCard } from "../../cds-hooks/cards.js";
import { caseOfCardUuid, FeedbackRequest, overrideReasonText } from "../../cds-hooks/card-feedback.js";
import { cardIndicator, summariseAnswer } from "../../view/answer-state.js";
import { z } from "zod";
import { Discovery, discoveryDocument, SERVICE_ID } from "../../cds-hooks/discovery.js";
import { afterFirstPage, fetchLinkedText, fetchMissingPrefetch, fetchNextPages, isAllowedFhirServer, pagedPrefetch, type NotRead } from "../../cds-hooks/fhir-fetch.js";
import { HookRequest, HookResponse } from "../../cds-hooks/hook-request.js";
import { CdsJwtVerifier, looksLikeJwt } from "../../cds-hooks/jwt-auth.js";
import { inPrefetchTerms, otherPatientNotRead, prefetchToBundle, withNotRead } from "../../cds-hooks/prefetch-bundle.js";
import { pseudonymSecret } from "../../../core/intake/fhir/pseudonym-secret.js";
import { MedmmvError } from "../../../core/contracts/errors.js";
import { canonicalJson } from "../../../core/contracts/canonical-json.js";
import { isTerminal } from "../../service/case-service.js";
import type { CaseRecord } from "../../store/case-store.js";
import { signViewLink } from "../../view/signed-link.js";
import { apiKeyAuth, BEARER, ehrPrincipal, OPEN_OWNER, openPrincipal, requirePermission, viewLinkId, type Principal } from "../auth.js";
import type { Config } from "../../../core/config.js";
import type { TokenLedger } from "../../store/case-store.js";
import { fhirRoutes } from "./fhir.js";
import { whileClientConnected } from "../client-gone.js";
import { ErrorBody, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";
import { MAX_LINK_TTL_SEC } from "./view.js";

const SERVICE_PATH = `/cds-services/${SERVICE_ID}`;

/** The EHRs' JWT check, each issuer against its own JWKS; null when no EHR is configured. */
function ehrVerifier(config: Config, store: TokenLedger): CdsJwtVerifier | null {
  return config.cds.issuerKeys.length ? new CdsJwtVerifier({ issuerKeys: config.cds.issuerKeys, usedTokenIds: store }) : null;
}

/** The EHR user a verified JWT acts as: a clinician of the tenant its issuer is mapped to. */
async function ehrCaller(jwt: CdsJwtVerifier, token: string, audience: string, tenants: Config["cds"]["issuerKeys"]): Promise<Principal> {
  const { iss, sub } = await jwt.verify(token, audience);
  return ehrPrincipal(iss, sub, tenants.find((i) => i.iss === iss)?.tenant ?? null);
}
/** Failed analyses of one record retried by later calls, at most. */
const MAX_RETRIES_PER_RECORD = 5;

/**
 * CDS Hooks 2.0.1 (discovery and the patient-view service). Outside the key-only context:
 * an EHR authenticates with a signed JWT (MEDMMV_CDS_JWKS) or, like any client, an API key.
 * CORS only for the origins configured (MEDMMV_CORS_ORIGINS), e.g. the CDS Hooks sandbox.
 */
export const cdsHooksRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, { config, service, store, secret, gate, credentials, keys, access, metrics }) => {
  if (config.cds.corsOrigins.length) {
    await app.register(cors, { origin: config.cds.corsOrigins, methods: ["GET", "POST"], allowedHeaders: ["authorization", "content-type"], maxAge: 600 });
  }
  const jwt = ehrVerifier(config, store);
  // With a JWKS the public URL is configured (loadConfig refuses otherwise): the audience never comes from the request.
  // Without one, only card links use the request's host, and only API-key (or open, loopback) callers get them.
  const publicBase = (request: FastifyRequest) => config.cds.publicUrl ?? `${request.protocol}://${request.host}`;
  /** Requests authenticated by the EHR's JWT (not an API key). */
  const viaJwt = new WeakSet<FastifyRequest>();

  /**
   * Why the missing prefetch cannot be fetched, or null when it can. An API-key caller (or
   * anyone, with no credentials configured) may name any fhirServer and patient: without the
   * EHR's own token for that server it would read a patient the caller has no right to, with
   * this service's network position. So such a call needs fhirAuthorization (403 naming it);
   * an EHR that signed its JWT is trusted with an open FHIR server of its own.
   */
  const whyNotFetchable = (call: HookRequest, signedByEhr: boolean): string | null => {
    if (!call.fhirServer) return "the call names no fhirServer";
    if (!isAllowedFhirServer(call.fhirServer, config.cds.fhirServers)) return "its fhirServer is not one this service may contact (MEDMMV_FHIR_SERVERS)";
    if (!signedByEhr && !call.fhirAuthorization) {
      throw new MedmmvError("FORBIDDEN", "a call authenticated by API key may have the missing prefetch fetched from fhirServer only with the EHR's fhirAuthorization (an access token for that server); send fhirAuthorization, or the prefetch itself");
    }
    return null;
  };

  /**
   * Why the rest of what the EHR sent (a search's next pages, a report's linked text) cannot be
   * read from its server, or null when it can: the same server rules as for missing prefetch,
   * but an API-key call without the EHR's token is not refused for it — what it sent is read,
   * and the card says what was not.
   */
  const whyNotReadFromServer = (call: HookRequest, signedByEhr: boolean): string | null => {
    if (!call.fhirServer) return "the call names no fhirServer to read it from";
    if (!isAllowedFhirServer(call.fhirServer, config.cds.fhirServers)) return "its fhirServer is not one this service may contact (MEDMMV_FHIR_SERVERS)";
    if (!signedByEhr && !call.fhirAuthorization) return "the call sent no fhirAuthorization to read it with";
    return null;
  };

  app.get(
    "/cds-services",
    { schema: { tags: ["cds-hooks"], summary: "CDS Hooks discovery: the services this server offers", security: [], response: { 200: Discovery } } },
    async () => discoveryDocument(),
  );

  /** The hook's authentication; a JWT's audience is the endpoint called (2.0.1: the service, or its feedback endpoint). */
  const authenticateFor = (path: string) => gate.hook(async (request) => {
    const m = BEARER.exec(request.headers.authorization ?? "");
    const open = !keys.enabled && !jwt;
    if (!m) {
      if (open) {
        request.principal = openPrincipal();
        return OPEN_OWNER;
      }
      throw new MedmmvError("UNAUTHORIZED", "send `Authorization: Bearer <jwt>` signed by the EHR (CDS Hooks), or an API key");
    }
    const token = m[1]!;
    const byKey = keys.enabled ? keys.principal(token) : null;
    if (byKey) {
      request.principal = byKey;
      return byKey.owner;
    }
    if (jwt && looksLikeJwt(token)) {
      request.principal = await ehrCaller(jwt, token, `${config.cds.publicUrl!}${path}`, config.cds.issuerKeys);
      viaJwt.add(request);
      return request.principal.owner;
    }
    if (open) {
      request.principal = openPrincipal();
      return OPEN_OWNER;
    }
    throw new MedmmvError("UNAUTHORIZED", "invalid credentials: neither an API key nor a CDS Hooks JWT");
  });
  const authenticate = authenticateFor(SERVICE_PATH);

  /**
   * The record's content hash. `metadata.fhir.referenceDate` is left out: with no dated
   * fact in the prefetch it is the wall clock, which would make every call a new record.
   * What it drives (the patient's age) is already in `patient.age` and the notes.
   */
  const recordHash = (c: ClinicalCase): string => {
    const { referenceDate: _clock, ...fhir } = (c.metadata?.fhir ?? {}) as Record<string, unknown>;
    return createHash("sha256").update(canonicalJson({ ...c, metadata: { ...c.metadata, fhir } })).digest("hex");
  };

  /**
   * The same record is analysed once: its content hash is the idempotency key of the case,
   * and the case found under it (finished or still running) is the record's answer.
   * A failed analysis (the model endpoint was down) is not the record's answer: the next
   * call starts a new case under a key derived from the failed one, a bounded chain.
   */
  const recordKey = async (owner: string, hash: string): Promise<{ key: string; prior: CaseRecord | null }> => {
    let key = `cds-${hash}`;
    for (let i = 0; i < MAX_RETRIES_PER_RECORD; i++) {
      const prior = await store.findByIdempotencyKey(owner, key);
      if (!prior || prior.status !== "failed") return { key, prior };
      key = `cds-${hash}-after-${prior.id}`;
    }
    return { key, prior: null };
  };

  /**
   * A patient-view call whose record holds nothing to analyse. CDS Hooks lets a service
   * answer with no cards, and an EHR shows a 4xx as a failing service; so `{"cards": []}`
   * with the reason in the server log, unless MEDMMV_CDS_EMPTY_RECORD=422 asks for the refusal.
   */
  const nothingToAnalyse = (request: FastifyRequest, why: string, details: Record<string, unknown>): { cards: [] } => {
    if (config.cds.emptyRecord === "422") throw new MedmmvError("UNPROCESSABLE", why, { details });
    request.log.info({ reason: why.slice(0, 300) }, "patient-view: nothing to analyse, answered with no cards");
    return { cards: [] };
  };

  app.post(
    SERVICE_PATH,
    {
      onRequest: authenticate,
      schema: {
        tags: ["cds-hooks"],
        summary: "CDS Hooks patient-view: a card with medmmv's answer for the patient's record",
        description:
          "The prefetch becomes a FHIR Bundle and then a case. A record already analysed (same content) answers with its finished case's card; otherwise the case starts and an info card links to it at once. A null prefetch value means the EHR has no such data. Absent prefetch is fetched only from a fhirServer on MEDMMV_FHIR_SERVERS (with fhirAuthorization, required of API-key callers: 403 otherwise); a query that fails, or a key the EHR answered with an OperationOutcome, makes the card say what was not read, and a Patient neither sent nor fetched is 412. A record with nothing to analyse answers no cards (MEDMMV_CDS_EMPTY_RECORD=422: a 422 saying why).",
        body: HookRequest,
        response: { 200: HookResponse, ...errorResponses, 403: ErrorBody, 409: ErrorBody, 412: ErrorBody, 413: ErrorBody, 415: ErrorBody, 422: ErrorBody },
      },
    },
    async (request, reply) => {
      const call = request.body;
      // The patient's age is their age at this call, whatever dates the prefetch holds.
      const calledAt = new Date().toISOString();
      // A prefetch search the EHR sent with a `next` page: the rest is read from its server when it may be, else the card says what is missing.
      let prefetch = call.prefetch;
      const pageNotRead: NotRead[] = [];
      const paged = pagedPrefetch(prefetch);
      if (paged.length) {
        const cannot = whyNotReadFromServer(call, viaJwt.has(request));
        if (cannot) pageNotRead.push(...paged.map((p) => afterFirstPage(p, `the EHR sent a next page; ${cannot}`)));
        else {
          const pages = await fetchNextPages(paged, { fhirServer: call.fhirServer!, accessToken: call.fhirAuthorization?.access_token, allowList: config.cds.fhirServers, maxBytes: config.http.maxBodyBytes });
          prefetch = { ...prefetch, ...pages.fetched };
          pageNotRead.push(...pages.notRead);
        }
      }
      const sent = prefetchToBundle(prefetch);
      const { missing } = sent;
      let { bundle, origins } = sent;
      /** Prefetch keys the EHR answered with an OperationOutcome, that did not come and could not be fetched, and why. */
      let notRead: NotRead[] = [...sent.notRead, ...pageNotRead];
      if (missing.length) {
        const cannot = whyNotFetchable(call, viaJwt.has(request));
        if (cannot) notRead.push(...missing.map((key) => ({ key, reason: cannot })));
        else {
          const got = await fetchMissingPrefetch(missing, {
            fhirServer: call.fhirServer!,
            accessToken: call.fhirAuthorization?.access_token,
            patientId: call.context.patientId,
            allowList: config.cds.fhirServers,
            maxBytes: config.http.maxBodyBytes,
          });
          const merged = prefetchToBundle({ ...prefetch, ...got.fetched });
          ({ bundle, origins } = merged);
          notRead = [...merged.notRead, ...pageNotRead, ...got.failed, ...got.truncated];
          if (got.failed.length) request.log.info({ notRead: got.failed.map((f) => f.key) }, "prefetch queries failed on the FHIR server; the card says what was not read");
        }
      }
      // The record is the patient's: without the Patient it is not known to be theirs (CDS Hooks 412).
      const noPatient = notRead.find((n) => n.key === "patient");
      if (noPatient) {
        throw new MedmmvError("PRECONDITION_FAILED", `the prefetch has no Patient (key "patient") and it cannot be fetched: ${noPatient.reason}; send it in the prefetch, or a fhirServer on MEDMMV_FHIR_SERVERS with fhirAuthorization`, {
          details: { notRead },
        });
      }
      if (notRead.length) request.log.info({ notRead: notRead.map((n) => n.key) }, "part of the prefetch was not read; the card and the case's provenance say which");
      // A report or document that is only a link to its text: read from the EHR's server when it may be (else the intake lists it as a link).
      if (!whyNotReadFromServer(call, viaJwt.has(request))) {
        notRead.push(...(await fetchLinkedText(bundle.entry as Array<{ resource: Record<string, unknown> }>, { fhirServer: call.fhirServer!, accessToken: call.fhirAuthorization?.access_token, allowList: config.cds.fhirServers, maxBytes: config.http.maxBodyBytes })));
      }
      const entries = bundle.entry as Array<{ resource: { resourceType?: unknown; id?: unknown } }>;
      if (!entries.length) return nothingToAnalyse(request, "the prefetch holds none of the patient's record (every key is null or an empty search): there is nothing to analyse", { notRead });
      const patient = entries.find((e) => e.resource.resourceType === "Patient");
      if (patient && patient.resource.id !== call.context.patientId) {
        throw new MedmmvError("INVALID_INPUT", "the prefetched Patient is not context.patientId; prefetch the patient in context");
      }
      let input: ClinicalCase;
      try {
        // The body schema here is the hook request: the case is held to what POST /diagnose accepts.
        // Read in slices, with the same notes budget and limits as POST /diagnose on a Bundle.
        const read = await bundleToCaseYielding(bundle, {
          maxImageBytes: config.http.maxImageBytes,
          closedBundle: false,
          ...config.fhir,
          referenceDate: calledAt,
          patientId: call.context.patientId,
          pseudonymSecret: pseudonymSecret(config.fhir.pseudonymSecret, config.store.dataDir),
        });
        withNotRead(read, notRead);
        // Another patient's resources in the prefetch were left out of the case: the card says so too.
        notRead.push(...otherPatientNotRead(read));
        const parsed = ClinicalCase.safeParse(read);
        if (!parsed.success) {
          const { message, issues } = describeZodIssues(parsed.error);
          throw new MedmmvError("UNPROCESSABLE", `the prefetch makes a case medmmv cannot accept: ${message}`, { details: { issues: issues.map((i) => ({ ...i, path: `case.${i.path}` })) } });
        }
        input = parsed.data;
      } catch (err) {
        // Only a Patient, billing or an OperationOutcome: the EHR sent no fact to reason on (422, said so).
        if (isNoClinicalFactsRefusal(err)) return nothingToAnalyse(request, `the prefetch holds no clinical fact of the patient to analyse: ${(err as MedmmvError).message}`, { ...(err as MedmmvError).details, notRead });
        throw inPrefetchTerms(err, origins);
      }
      const { key, prior } = await recordKey(request.owner, recordHash(input));
      // Not resubmitted: the stored case may differ from this one in its reference date alone.
      // The EHR's token goes to the PACS of its own ImagingStudy (allow-listed only); it is not part of the record's key.
      const withPacs = withEhrPacsToken(input, call.fhirAuthorization?.access_token, config.images.dicomweb.servers);
      const { record, replayed } = await access.audited(
        request,
        "create",
        (s) => s.record.id,
        async () => {
          const scope = requirePermission(request, "submit");
          return prior
            ? { record: prior, replayed: true }
            : // An EHR that gives up on the call (its hook timed out, the user moved on) stops the reading of the case's images.
              await whileClientConnected(reply, (signal) => service.submit({ owner: scope.owner, tenant: scope.tenant, submittedBy: request.principal!.keyId, input: withPacs, overrides: {}, idempotencyKey: key, pacsStanding: viaJwt.has(request) ? "ehr" : "caller", signal }));
        },
        (s) => ({ replayed: s.replayed, via: "cds-hooks" }),
      );
      const token = signViewLink({ caseId: record.id, owner: request.owner, keyId: credentials.keyId(request.owner) }, secret, MAX_LINK_TTL_SEC);
      await access.record(request, "view-link", record.id, "success", { linkId: viewLinkId(token), ttlSec: MAX_LINK_TTL_SEC, via: "cds-hooks" });
      const viewUrl = `${publicBase(request)}/cases/${encodeURIComponent(record.id)}/view?token=${encodeURIComponent(token)}`;
      if (isTerminal(record.status) && record.result) return { cards: [resultCard(record.result, viewUrl, notRead)] };
      return { cards: [startedCard(viewUrl, replayed, notRead)] };
    },
  );

  app.post(
    `${SERVICE_PATH}/feedback`,
    {
      onRequest: authenticateFor(`${SERVICE_PATH}/feedback`),
      schema: {
        tags: ["cds-hooks"],
        summary: "CDS Hooks 2.0.1 feedback: what the clinician did with a card (accepted, or overridden with a reason)",
        description:
          "Each entry names a result card by its `uuid`. It is written to the case's access trail (action `feedback`: outcome, the override reason's code and words; the user's comment is not stored, it may name the patient), shown in the audit view and the auditor pages, counted in /metrics (medmmv_cds_card_feedback_total by outcome and the card's indicator) and searchable (`GET /cases?feedback=overridden`). A card of a case out of the caller's reach is 404, like a case.",
        body: FeedbackRequest,
        response: { 200: z.object({}).describe("Feedback received"), ...errorResponses },
      },
    },
    async (request) => {
      for (const f of request.body.feedback) {
        const caseId = caseOfCardUuid(f.card);
        const reason = overrideReasonText(f);
        await access.audited(
          request,
          "feedback",
          caseId,
          async () => {
            const record = await service.get(requirePermission(request, "read"), caseId);
            if (!record.result) throw new MedmmvError("NOT_FOUND", `card ${f.card} is not the card of a finished case`);
            const indicator = cardIndicator(summariseAnswer(record.result).state);
            await store.setFeedback(caseId, f.outcome);
            metrics?.cardFeedback.inc({ outcome: f.outcome, indicator });
            return indicator;
          },
          (indicator) => ({ card: f.card, outcome: f.outcome, reason, reasonCode: f.overrideReason?.reason?.code ?? null, indicator, outcomeTimestamp: f.outcomeTimestamp }),
        );
      }
      return {};
    },
  );
};

/**
 * GET /cases/{id}/fhir for the EHR too: a case made through the hook belongs to the EHR's
 * issuer, so the EHR reads its FHIR result with the same kind of credential it calls the
 * hook with, a JWT signed by a key of MEDMMV_CDS_JWKS (aud: this URL, under
 * MEDMMV_PUBLIC_URL; a fresh jti). An API key works as everywhere else. Registered here,
 * outside the key-only context, for that reason; the route itself is fhirRoutes.
 */
export const caseFhirRoutes: FastifyPluginAsyncZod<RouteDeps> = async (app, deps) => {
  const { config, store, gate, keys } = deps;
  const byKey = apiKeyAuth(keys);
  const jwt = ehrVerifier(config, store);
  // Through the one gate, like every authenticated route: failed attempts counted first, one budget per key.
  app.addHook(
    "onRequest",
    gate.hook(async (request) => {
      const bearer = BEARER.exec(request.headers.authorization ?? "")?.[1];
      // An API key is never three base64url parts; a JWT is, and is checked only when a JWKS is configured.
      if (!(jwt && bearer && looksLikeJwt(bearer))) return byKey(request);
      const id = (request.params as { id?: string }).id ?? "";
      request.principal = await ehrCaller(jwt, bearer, `${config.cds.publicUrl!}/cases/${encodeURIComponent(id)}/fhir`, config.cds.issuerKeys);
      return request.principal.owner;
    }),
  );
  await app.register(fhirRoutes, deps);
};
