import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import { neutraliseDelimiters } from "../contracts/prompt-fence.js";
import type { LlmClient, CallContext, Role } from "../llm/model-client.js";
import type { PromptLibrary } from "../llm/prompt-template.js";
import { imagePart, type ChatMessage, type ContentPart } from "../llm/messages.js";
import { CASE_END, EVIDENCE_END, SCHEMA_LEAD } from "../llm/prompt-layout.js";
import type { SearchProvider } from "../search/search-provider.js";
import { renderPathwayForPrompt } from "../pathways/render-pathway.js";
import { describedImagesText, describingModel, ImageDescriptions, ImageFindings, takesImages, unseenImagesText, type Described } from "./image-description.js";

/** What every agent needs, injected (agents never read env or construct clients). */
export interface AgentDeps {
  llm: LlmClient;
  prompts: PromptLibrary;
  search: SearchProvider;
  /** The running cases' image descriptions for text-only models (image-description.ts); absent: one per case object. */
  imageDescriptions?: ImageDescriptions;
}

/** Image descriptions of cases run without a pipeline's (an eval method's, a conversation's). */
const sharedDescriptions = new ImageDescriptions();

/**
 * The case block is the first part of every user message, identical across all calls of
 * a case, so that providers' prompt caches see one shared prefix (system + case).
 */
export function renderCaseBlock(c: PreparedCase): string {
  const lines: string[] = ["<<<CASE"];
  if (c.patient && (c.patient.age !== undefined || c.patient.sex !== undefined))
    lines.push(`Patient: ${[c.patient.age !== undefined ? `age ${c.patient.age}` : "", c.patient.sex ? `sex ${c.patient.sex}` : ""].filter(Boolean).join(", ")}`);
  if (c.notes) lines.push(`Clinical notes:\n${neutralise(c.notes)}`);
  lines.push(`Question:\n${neutralise(c.question)}`);
  if (c.options && Object.keys(c.options).length) {
    lines.push("Answer options:");
    for (const [k, v] of Object.entries(c.options).sort(([a], [b]) => a.localeCompare(b))) lines.push(`(${k}) ${neutralise(v)}`);
  }
  // Image ids are client text too (up to 128 characters of anything): they must not close the fence either.
  if (c.images.length) lines.push(`Images: ${c.images.map((i) => (i.caption ? `${neutralise(i.id)} (${neutralise(i.caption)})` : neutralise(i.id))).join("; ")}`);
  const pathway = renderPathwayForPrompt(c.pathway);
  if (pathway) lines.push(neutralise(pathway));
  lines.push(CASE_END);
  return lines.join("\n");
}

/** Case and model text must not be able to close our delimiters and speak as "us": the one neutraliser every fence uses. */
export const neutralise = neutraliseDelimiters;

export function answerInstruction(c: PreparedCase): string {
  if (c.options && Object.keys(c.options).length)
    return `Choose exactly one option letter from (${Object.keys(c.options).sort().join(", ")}): set answer.option to the letter and answer.text to the option's text.`;
  return "There are no options: set answer.option to null and answer.text to a short answer (for yes/no questions, \"yes\" or \"no\").";
}

export interface PromptRequest {
  agent: string;
  slots: Record<string, string>;
  schema: z.ZodType;
  withImages?: boolean;
  /**
   * The rendered evidence graph, for the calls that plan searches, check and repair paths
   * against it. It goes right after the case block, before the agent's own instructions (the
   * images come after those), so that every such call of a case shares one long prefix.
   */
  evidence?: string;
}

/**
 * The schema text of a prompt, rendered once per schema object: z.toJSONSchema on every
 * call was ≈ 0.4 ms of CPU per model call (`npm run bench`, orchestration overhead).
 */
const schemaTexts = new WeakMap<z.ZodType, string>();
function schemaText(schema: z.ZodType): string {
  let text = schemaTexts.get(schema);
  if (text === undefined) {
    text = JSON.stringify(z.toJSONSchema(schema));
    schemaTexts.set(schema, text);
  }
  return text;
}

/**
 * Where a template places the reply's JSON Schema. Every template puts it between its own
 * task (the same for all its calls of a case) and its variable part (a path, search
 * results, a rollout's index), so that all of an agent's calls share the task and schema.
 */
export const RESPONSE_SCHEMA_SLOT = "responseSchema";

/** The case block of each case object, rendered once for the several calls a node makes. */
const caseBlocks = new WeakMap<PreparedCase, string>();
function caseBlock(c: PreparedCase): string {
  let block = caseBlocks.get(c);
  if (block === undefined) {
    block = renderCaseBlock(c);
    caseBlocks.set(c, block);
  }
  return block;
}

/** One system message object per prompt library, shared by every call (and so one cache-key prefix). */
const systemMessages = new WeakMap<PromptLibrary, ChatMessage>();
function systemMessage(prompts: PromptLibrary): ChatMessage {
  let m = systemMessages.get(prompts);
  if (!m) {
    m = Object.freeze({ role: "system", content: prompts.get("system").source }) as ChatMessage;
    systemMessages.set(prompts, m);
  }
  return m;
}

/**
 * One call's messages, laid out for providers' prefix caches (OpenAI's automatic prompt
 * caching, vLLM's prefix caching): what the calls of a case share comes first and in the
 * same bytes, what varies last. The order is
 *   system · case block · evidence graph · agent task · schema · images · variable part
 * so every call of a case shares system + case, the calls that plan searches, check and
 * repair also the evidence, and an agent's calls of a case also its task, schema and the
 * images (five rollouts differ only in their index). docs/architecture.md (model layer).
 */
export function buildMessages(deps: AgentDeps, c: PreparedCase, req: PromptRequest, imagesInstead?: string): ChatMessage[] {
  const template = deps.prompts.get(req.agent);
  const schemaBlock = `${SCHEMA_LEAD}${schemaText(req.schema)}`;
  const evidence = req.evidence === undefined ? "" : `Evidence graph (ids in brackets):\n<<<EVIDENCE\n${req.evidence}\n${EVIDENCE_END}\n\n`;
  // A template without the slot (an embedding program's own) gets the schema last.
  const [task, variable] = template.slots.includes(RESPONSE_SCHEMA_SLOT) ? template.renderAround(RESPONSE_SCHEMA_SLOT, req.slots) : [`${template.render(req.slots)}\n\n`, ""];
  const shared = `${caseBlock(c)}\n\n${evidence}${task}${schemaBlock}`;
  const system = systemMessage(deps.prompts);
  if (!req.withImages || c.images.length === 0) return [system, { role: "user", content: `${shared}${variable}` }];
  const parts: ContentPart[] = [{ type: "text", text: shared }];
  // A model that takes no images gets, in the images' place, what stands in for them (image-description.ts).
  if (imagesInstead !== undefined) parts.push({ type: "text", text: `\n\n${imagesInstead}\n\n` });
  else for (const img of c.images) parts.push(imagePart(img.mimeType, img.data));
  const rest = variable.replace(/^\s+/, "");
  if (rest) parts.push({ type: "text", text: rest });
  return [system, { role: "user", content: parts }];
}

/** One structured call of an agent: prompt → model → validated object. */
export async function callAgent<S extends z.ZodType>(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  args: PromptRequest & { role: Role; temperature: number; schema: S; model?: string },
): Promise<z.infer<S>> {
  const imagesInstead = args.withImages && c.images.length > 0 && !takesImages(deps.llm, args.role, args.model) ? await standInForImages(deps, ctx, c) : undefined;
  return deps.llm.structured(
    {
      role: args.role,
      agent: args.agent,
      schema: args.schema,
      schemaName: args.agent.replace(/-/g, "_"),
      messages: buildMessages(deps, c, args, imagesInstead),
      temperature: args.temperature,
      ...(args.model !== undefined ? { model: args.model } : {}),
    },
    ctx,
  );
}

/**
 * The findings the vision role's model sees in the case's images: ImageDoctor's first call,
 * made once per case (image-description.ts) and shared with every text-only model's call that
 * needs the images described. A caller that did not make it waits for it on its own call
 * chain, so the critical path counts it.
 */
export async function describeCaseImages(deps: AgentDeps, ctx: CallContext, c: PreparedCase): Promise<ImageFindings> {
  const imageIds = c.images.map((i) => i.id).join(", ");
  const ask = async (): Promise<Described> => {
    const findings = await callAgent(deps, ctx, c, { agent: "image-doctor", role: "vision", temperature: 0, schema: ImageFindings, withImages: true, slots: { imageIds } });
    return { findings, depth: ctx.chain.depth };
  };
  const described = await (deps.imageDescriptions ?? sharedDescriptions).once(ctx.caseKey, c, ask);
  ctx.chain.depth = Math.max(ctx.chain.depth, described.depth);
  return described.findings;
}

/** What a text-only model is sent in the images' place: the vision model's description, or (no model takes images) a note that no model examined them. */
async function standInForImages(deps: AgentDeps, ctx: CallContext, c: PreparedCase): Promise<string> {
  const describer = describingModel(deps.llm);
  if (describer === null) return unseenImagesText(c);
  return describedImagesText(c, await describeCaseImages(deps, ctx, c), describer);
}
