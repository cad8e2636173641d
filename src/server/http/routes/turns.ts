import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { ConversationService } from "../../conversation/conversation-service.js";
import type { ConversationTurn } from "../../store/case-store.js";
import { requirePermission } from "../auth.js";
import { CaseIdParams, ErrorBody, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const TurnBody = z
  .object({
    question: z.string().trim().min(1, "question must not be empty").max(5_000).describe("The clinician's question about the case"),
    step: z.string().min(1).max(64).optional().describe("The pathway step the question is about (a step id of the case's pathway); without it the model says which"),
  })
  .strict();

export const TurnView = z.object({
  turn: z.number().int().describe("1-based turn number within the case's conversation"),
  question: z.string(),
  answer: z.string(),
  step: z.string().nullable().describe("Pathway step the question was about (null without a pathway)"),
  category: z.string().nullable().describe("Labeller category of the answer at that step, or no-match"),
  contextConflict: z.boolean().describe("True when the labelled sequence of all turns so far leaves the pathway's valid paths"),
  evidence: z.array(z.object({ id: z.string(), label: z.string() })).describe("Evidence nodes the answer's supported claims rest on"),
  details: z.record(z.string(), z.unknown()).describe("Claim verdicts, the conflict (steps, labels), how the answer was labelled, usage"),
  at: z.string(),
});

function turnView(t: ConversationTurn): z.infer<typeof TurnView> {
  return { turn: t.turn, question: t.question, answer: t.answer, step: t.step, category: t.category, contextConflict: t.contextConflict, evidence: t.evidence, details: t.details, at: t.at };
}

/** Conversations on a finished case (docs/architecture.md#clinical-pathways-and-conversations). Another key's case is 404, like every case route. */
export const turnRoutes: FastifyPluginAsyncZod<RouteDeps> = async (app, { service, store, config, access }) => {
  const conversations = new ConversationService({ store, cases: service, agents: service.agentDeps, prices: config.llm.prices });

  app.post(
    "/cases/:id/turns",
    {
      schema: {
        tags: ["cases"],
        summary: "Ask a follow-up question about a finished case",
        description:
          "Answered by a short rollout and an hd-supervisor pass over the case's evidence graph and the earlier turns. With a pathway on the case, the answer is labelled at its step and `contextConflict` says whether the conversation has left the pathway's valid paths. 409 while the case is running, or when it failed.",
        params: CaseIdParams,
        body: TurnBody,
        response: { 201: TurnView, 409: ErrorBody, ...errorResponses },
      },
    },
    async (request, reply) => {
      const t = await access.audited(request, "turns", request.params.id, () => conversations.ask(requirePermission(request, "submit"), request.params.id, { question: request.body.question, ...(request.body.step ? { step: request.body.step } : {}) }));
      return reply.status(201).send(turnView(t));
    },
  );

  app.get(
    "/cases/:id/turns",
    {
      schema: {
        tags: ["cases"],
        summary: "The conversation on a case, turn by turn",
        params: CaseIdParams,
        response: { 200: z.object({ caseId: z.string(), turns: z.array(TurnView) }), ...errorResponses },
      },
    },
    async (request) => ({ caseId: request.params.id, turns: (await access.audited(request, "turns", request.params.id, () => conversations.list(requirePermission(request, "read"), request.params.id))).map(turnView) }),
  );
};
