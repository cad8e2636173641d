import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { ClinicalCase } from "../../../core/contracts/clinical-case.js";
import { DiagnosisResult } from "../../../core/contracts/diagnosis-result.js";
import { isMedmmvError, MedmmvError, type ErrorCode } from "../../../core/contracts/errors.js";
import { isTerminal } from "../../service/case-service.js";
import type { CaseRecord } from "../../store/case-store.js";
import { fhirBundleToCase } from "../fhir-requests.js";
import { requirePermission } from "../auth.js";
import { whileClientConnected } from "../client-gone.js";
import { CaseAccepted, ErrorBody, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const DiagnoseQuery = z.object({
  k: z.coerce.number().int().min(1).max(32).optional().describe("Rollouts per case (default MEDMMV_K)"),
  maxRepairs: z.coerce.number().int().min(0).max(10).optional().describe("Repair budget per path (default MEDMMV_MAX_REPAIRS)"),
  maxTokens: z.coerce.number().int().min(1).optional().describe("Token budget of the case (prompt + completion; default MEDMMV_CASE_MAX_TOKENS): once spent, remaining repairs are skipped and the result says budgetExhausted"),
  maxCostUsd: z.coerce.number().positive().optional().describe("Cost budget of the case in USD at the configured prices (default MEDMMV_CASE_MAX_COST_USD); like maxTokens"),
  adaptive: z
    .enum(["true", "false"], { error: 'adaptive must be "true" or "false"' })
    .transform((v) => v === "true")
    .optional()
    .describe("Sample rollouts in rounds and stop early when the first round agrees: fewer model calls, same answer on agreeing cases (default MEDMMV_ADAPTIVE)"),
  composeReply: z
    .enum(["true", "false"], { error: 'composeReply must be "true" or "false"' })
    .transform((v) => v === "true")
    .optional()
    .describe("Open-ended questions: compose the verified reply a person reads (result.reply; its factual statements checked by the hallucination detector, unsupported ones left out): two more calls on the critical path (default MEDMMV_COMPOSE_REPLY)"),
  question: z.string().max(20_000).optional().describe('FHIR Bundle requests only: the question (default "What is the most likely diagnosis?")'),
  option: z.union([z.string(), z.array(z.string())]).optional().describe('FHIR Bundle requests only: an answer option as "LETTER:text", repeated per option'),
});

const DiagnoseHeaders = z.looseObject({
  "idempotency-key": z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, "use printable ASCII without spaces")
    .optional()
    .describe("Retry safely: the same key and body return the stored case without running it again"),
  prefer: z.string().max(200).optional().describe("`respond-async` answers 202 at once instead of waiting for the result"),
});

function wantsAsync(prefer: string | undefined): boolean {
  return !!prefer && /(^|[\s,;])respond-async(?=$|[\s,;])/i.test(prefer);
}

function accepted(r: CaseRecord) {
  const location = `/cases/${encodeURIComponent(r.id)}`;
  return { caseId: r.id, status: r.status, location, events: `${location}/events` };
}

/**
 * The multipart parser reports a broken upload (no boundary, a body cut off before the
 * closing delimiter) with plain Errors: the client's mistake, a 400 — not a 500. Our own
 * errors and Fastify's coded limit errors (413 and friends) keep their meaning.
 */
function malformedMultipart(err: unknown): unknown {
  if (isMedmmvError(err)) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.startsWith("FST_")) return err;
  return new MedmmvError("INVALID_INPUT", "the request is not valid multipart/form-data (no boundary, or the body ends before the closing delimiter); send a `case` field and image files", { cause: err });
}

/**
 * multipart/form-data → the same ClinicalCase object a JSON client sends, before
 * validation: the `case` field is the case JSON; each file part is an image whose id is
 * the part's field name (filling in `data` for an `images` entry with that id, or added).
 * So a CLI case file and its images upload as they are: `-F case=<case.json -F img1=@x.png`.
 */
function multipartToCase(maxBodyBytes: number) {
  // Multipart bypasses Fastify's body limit, so the same limit is enforced here, on the
  // declared length and then on what was actually read.
  const tooLarge = () =>
    new MedmmvError("PAYLOAD_TOO_LARGE", `the request body is larger than the limit of ${maxBodyBytes} bytes; send fewer or smaller images`, {
      details: { maxBytes: maxBodyBytes },
    });
  return async (request: FastifyRequest): Promise<void> => {
    if (!request.isMultipart()) return;
    if (Number(request.headers["content-length"] ?? 0) > maxBodyBytes) throw tooLarge();
    let caseText: string | null = null;
    let total = 0;
    const files = new Map<string, Buffer>();
    try {
      for await (const part of request.parts()) {
        if (part.type === "file") {
          if (files.has(part.fieldname)) throw new MedmmvError("INVALID_INPUT", `two files use the field name "${part.fieldname}"; each image needs its own id`);
          const buf = await part.toBuffer();
          total += buf.length;
          if (total > maxBodyBytes) throw tooLarge();
          files.set(part.fieldname, buf);
        } else if (part.fieldname === "case") {
          if (part.valueTruncated) throw tooLarge();
          caseText = String(part.value);
          total += caseText.length;
          if (total > maxBodyBytes) throw tooLarge();
        } else {
          throw new MedmmvError("INVALID_INPUT", `unexpected form field "${part.fieldname}": send the case JSON in a field named \`case\` and images as files`);
        }
      }
    } catch (err) {
      throw malformedMultipart(err);
    }
    if (caseText === null) throw new MedmmvError("INVALID_INPUT", "the multipart upload has no `case` field; send the ClinicalCase JSON in a field named `case`");
    let parsed: unknown;
    try {
      parsed = JSON.parse(caseText);
    } catch {
      throw new MedmmvError("INVALID_INPUT", "the `case` field is not valid JSON; send the ClinicalCase as a JSON object");
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new MedmmvError("INVALID_INPUT", "the `case` field must be a JSON object (a ClinicalCase)");
    const body = parsed as Record<string, unknown>;
    const images: unknown[] = Array.isArray(body.images) ? [...(body.images as unknown[])] : [];
    const used = new Set<string>();
    for (const [i, img] of images.entries()) {
      if (!img || typeof img !== "object") continue;
      const entry = img as Record<string, unknown>;
      if (typeof entry.id !== "string" || entry.data !== undefined) continue;
      const file = files.get(entry.id);
      if (!file) {
        if (entry.path !== undefined) continue; // refused with its own message when the case is prepared
        throw new MedmmvError("INVALID_INPUT", `images[${i}] ("${entry.id}") has no \`data\` and no file part named "${entry.id}"`);
      }
      // A CLI case file names its images by `path`; uploaded, the file part stands in for it.
      const { path: _path, ...rest } = entry;
      images[i] = { ...rest, data: file.toString("base64") };
      used.add(entry.id);
    }
    for (const [id, file] of files) if (!used.has(id)) images.push({ id, data: file.toString("base64") });
    if (images.length) body.images = images;
    request.body = body;
  };
}

export const diagnoseRoutes: FastifyPluginAsyncZod<RouteDeps> = async (app, { service, config, access }) => {
  app.post(
    "/diagnose",
    {
      // A role that may not submit is refused before its body is read.
      onRequest: async (request) => {
        await access.guard(request, "create", "submit");
      },
      preValidation: [multipartToCase(config.http.maxBodyBytes), fhirBundleToCase(config)],
      // A FHIR Bundle body is parsed by fhirBundleToCase, in slices (fhir-requests.ts).
      config: { fhirInSlices: true },
      schema: {
        tags: ["cases"],
        summary: "Diagnose a clinical case",
        description:
          "Accepts a ClinicalCase as JSON (images as base64 `data`), as multipart/form-data (a `case` JSON field plus image files), or a FHIR R4 Bundle as application/fhir+json (question and options in the query; errors are OperationOutcomes). The case is stored before any model call. By default the request waits for the result (201 with the DiagnosisResult and `Location: /cases/{id}`); with `Prefer: respond-async` it answers 202 at once. A client that disconnects does not cancel the case.",
        querystring: DiagnoseQuery,
        headers: DiagnoseHeaders,
        body: ClinicalCase,
        response: {
          201: DiagnosisResult,
          202: CaseAccepted,
          ...errorResponses,
          409: ErrorBody,
          413: ErrorBody,
          415: ErrorBody,
          422: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      // Recorded as soon as the case exists, before its answer is awaited, so the creation precedes every later access to it.
      const submission = await access.audited(
        request,
        "create",
        (s) => s.record.id,
        async () => {
          const scope = requirePermission(request, "submit");
          // A client that goes away while its images are fetched and decoded stops that work.
          return await whileClientConnected(reply, (signal) =>
            service.submit({
              owner: scope.owner,
              tenant: scope.tenant,
              submittedBy: request.principal!.keyId,
              input: request.body,
              overrides: request.query,
              idempotencyKey: request.headers["idempotency-key"] ?? null,
              signal,
            }),
          );
        },
        (s) => ({ replayed: s.replayed }),
      );
      let record = submission.record;
      const view = accepted(record);
      void reply.header("location", view.location);
      if (submission.replayed) void reply.header("idempotent-replayed", "true");
      if (wantsAsync(request.headers.prefer)) {
        void reply.header("preference-applied", "respond-async");
        return reply.status(202).send(view);
      }
      if (!submission.replayed) {
        const done = await service.wait(record.id);
        if (!done) throw new MedmmvError("NOT_FOUND", `case ${record.id} was deleted while it ran`);
        record = done;
      }
      // Interrupted by a shutdown: the case resumes at the next start; point the client at it.
      if (!isTerminal(record.status)) return reply.status(202).send({ ...view, status: record.status });
      if (record.result) return reply.status(201).send(record.result);
      const err = record.error ?? { code: "INTERNAL", message: "the case failed" };
      throw new MedmmvError(err.code as ErrorCode, err.message, { details: { caseId: record.id } });
    },
  );
};
