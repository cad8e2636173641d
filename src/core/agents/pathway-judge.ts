import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import { NO_MATCH, type PathwayStep } from "../contracts/pathway.js";
import { callAgent, neutralise, type AgentDeps } from "./agent-context.js";

/** One schema object per step, so its JSON Schema text is rendered once (agent-context caches by object). */
const schemas = new WeakMap<PathwayStep, z.ZodType<{ category: string; reason: string }>>();
function schemaFor(step: PathwayStep) {
  let s = schemas.get(step);
  if (!s) {
    const ids: [string, ...string[]] = [NO_MATCH, ...step.categories.map((c) => c.id)];
    s = z.object({
      category: z.enum(ids).describe(`One of: ${ids.join(", ")}`),
      reason: z.string().describe("One short sentence"),
    });
    schemas.set(step, s);
  }
  return s;
}

/**
 * The LLM-judge fallback of a pathway step (`judgeFallback: true`): an answer the keywords
 * left at no-match is classified by the judge, whose output is constrained to the step's
 * category ids (or no-match) by the schema.
 */
export async function runPathwayJudge(deps: AgentDeps, ctx: CallContext, c: PreparedCase, input: { step: PathwayStep; answer: string }): Promise<string> {
  const out = await callAgent(deps, ctx, c, {
    agent: "pathway-judge",
    role: "judge",
    temperature: 0,
    schema: schemaFor(input.step),
    slots: {
      step: `${input.step.id}: ${neutralise(input.step.question)}`,
      categories: input.step.categories.map((cat) => `${cat.id}: ${neutralise(cat.label)}`).join("\n"),
      answer: neutralise(input.answer),
    },
  });
  return out.category;
}
