import cors from "@fastify/cors";
import { createHash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { bundleToCase } from "../../../core/intake/fhir/bundle-to-case.js";
import { describeZodIssues } from "../../../core/contracts/zod-issues.js";
import { ClinicalCase } from "../../../core/contracts/clinical-case.js";
import { noRecordCard, resultCard, startedCard } from "../../cds-hooks/cards.js";
import { Discovery, discoveryDocument, SERVICE_ID } from "../../cds-hooks/discovery.js";
import { fetchMissingPrefetch, isAllowedFhirServer } from "../../cds-hooks/fhir-fetch.js";
import { HookRequest, HookResponse } from "../../cds-hooks/hook-request.js";
import { CdsJwtVerifier, looksLikeJwt } from "../../cds-hooks/jwt-auth.js";
import { inPrefetchTerms, prefetchToBundle } from "../../cds-hooks/prefetch-bundle.js";
import { MedmmvError } from "../../../core/contracts/errors.js";
import { canonicalJson } from "../../../core/contracts/canonical-json.js";
import { isTerminal } from "../../service/case-service.js";
import type { CaseRecord } from "../../store/case-store.js";
import { signViewLink } from "../../view/signed-link.js";
import { ApiKeys, BEARER, OPEN_OWNER } from "../auth.js";
import { ErrorBody, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";
import { MAX_LINK_TTL_SEC } from "./view.js";

const SERVICE_PATH = `/cds-services/${SERVICE_ID}`;
/** Failed analyses of one record retried by later calls, at most. */
const MAX_RETRIES_PER_RECORD = 5;

/**
 * CDS Hooks 2.0 (discovery and the patient-view service). Outside the key-only context:
 * an EHR authenticates with a signed JWT (MEDMMV_CDS_JWKS) or, like any client, an API key.
 * CORS only for the origins configured (MEDMMV_CORS_ORIGINS), e.g. the CDS Hooks sandbox.
 */
export const cdsHooksRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, { config, service, store, secret, gate, credentials }) => {
  if (config.cds.corsOrigins.length) {
    await app.register(cors, { origin: config.cds.corsOrigins, methods: ["GET", "POST"], allowedHeaders: ["authorization", "content-type"], maxAge: 600 });
  }
  const keys = new ApiKeys(config.http.apiKeys);
  const jwt = config.cds.jwks ? new CdsJwtVerifier({ jwks: config.cds.jwks, issuers: config.cds.issuers, usedTokenIds: store }) : null;
  const publicBase = (request: FastifyRequest) => config.cds.publicUrl ?? `${request.protocol}://${request.host}`;

  app.get(
    "/cds-services",
    { schema: { tags: ["cds-hooks"], summary: "CDS Hooks discovery: the services this server offers", security: [], response: { 200: Discovery } } },
    async () => discoveryDocument(),
  );

  const authenticate = gate.hook(async (request) => {
    const m = BEARER.exec(request.headers.authorization ?? "");
    const open = !keys.enabled && !jwt;
    if (!m) {
      if (open) return OPEN_OWNER;
      throw new MedmmvError("UNAUTHORIZED", "send `Authorization: Bearer <jwt>` signed by the EHR (CDS Hooks), or an API key");
    }
    const token = m[1]!;
    const owner = keys.enabled ? keys.verify(token) : null;
    if (owner) return owner;
    if (jwt && looksLikeJwt(token)) return (await jwt.verify(token, `${publicBase(request)}${SERVICE_PATH}`)).owner;
    if (open) return OPEN_OWNER;
    throw new MedmmvError("UNAUTHORIZED", "invalid credentials: neither an API key nor a CDS Hooks JWT");
  });

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

  app.post(
    SERVICE_PATH,
    {
      onRequest: authenticate,
      schema: {
        tags: ["cds-hooks"],
        summary: "CDS Hooks patient-view: a card with medmmv's answer for the patient's record",
        description:
          "The prefetch becomes a FHIR Bundle and then a case. A record already analysed (same content) answers with its finished case's card; otherwise the case starts and an info card links to it at once. Missing prefetch is fetched only from a fhirServer on MEDMMV_FHIR_SERVERS.",
        body: HookRequest,
        response: { 200: HookResponse, ...errorResponses, 409: ErrorBody, 413: ErrorBody, 415: ErrorBody, 422: ErrorBody },
      },
    },
    async (request) => {
      const call = request.body;
      let { bundle, missing, origins } = prefetchToBundle(call.prefetch);
      // Why there is no record, should the bundle come out empty: shown to the clinician.
      let noRecord = missing.length
        ? "The prefetch is incomplete, and the call names no fhirServer to fetch the rest of the record from."
        : "The prefetch holds none of the patient's record (its searches came back empty).";
      if (missing.length && call.fhirServer) {
        if (!isAllowedFhirServer(call.fhirServer, config.cds.fhirServers)) {
          request.log.info({ missing: missing.length }, "prefetch incomplete; fhirServer not on MEDMMV_FHIR_SERVERS, not contacted");
          noRecord = "The prefetch is incomplete, and the FHIR server is not one this service may contact (MEDMMV_FHIR_SERVERS).";
        } else {
          const fetched = await fetchMissingPrefetch(missing, { fhirServer: call.fhirServer, accessToken: call.fhirAuthorization?.access_token, patientId: call.context.patientId, allowList: config.cds.fhirServers });
          ({ bundle, missing, origins } = prefetchToBundle({ ...call.prefetch, ...fetched }));
          noRecord = "Neither the prefetch nor the FHIR server holds any of the patient's record.";
        }
      }
      const entries = bundle.entry as Array<{ resource: { resourceType?: unknown; id?: unknown } }>;
      if (!entries.length) return { cards: [noRecordCard(noRecord)] };
      const patient = entries.find((e) => e.resource.resourceType === "Patient");
      if (patient && patient.resource.id !== call.context.patientId) {
        throw new MedmmvError("INVALID_INPUT", "the prefetched Patient is not context.patientId; prefetch the patient in context");
      }
      let input: ClinicalCase;
      try {
        // The body schema here is the hook request: the case is held to what POST /diagnose accepts.
        const parsed = ClinicalCase.safeParse(bundleToCase(bundle, { maxImageBytes: config.http.maxImageBytes, closedBundle: false }));
        if (!parsed.success) {
          const { message, issues } = describeZodIssues(parsed.error);
          throw new MedmmvError("UNPROCESSABLE", `the prefetch makes a case medmmv cannot accept: ${message}`, { details: { issues: issues.map((i) => ({ ...i, path: `case.${i.path}` })) } });
        }
        input = parsed.data;
      } catch (err) {
        throw inPrefetchTerms(err, origins);
      }
      const { key, prior } = await recordKey(request.owner, recordHash(input));
      // Not resubmitted: the stored case may differ from this one in its reference date alone.
      const { record, replayed } = prior ? { record: prior, replayed: true } : await service.submit({ owner: request.owner, input, overrides: {}, idempotencyKey: key });
      const token = signViewLink({ caseId: record.id, owner: request.owner, keyId: credentials.keyId(request.owner) }, secret, MAX_LINK_TTL_SEC);
      const viewUrl = `${publicBase(request)}/cases/${encodeURIComponent(record.id)}/view?token=${encodeURIComponent(token)}`;
      if (isTerminal(record.status) && record.result) return { cards: [resultCard(record.result, viewUrl)] };
      return { cards: [startedCard(viewUrl, replayed)] };
    },
  );
};
