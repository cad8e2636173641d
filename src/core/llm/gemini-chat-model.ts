import { AsyncLocalStorage } from "node:async_hooks";
import { ChatGoogleGenerativeAI } from "@langchain/google-genai";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import type { BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";

const callSignal = new AsyncLocalStorage<AbortSignal | undefined>();

/**
 * ChatGoogleGenerativeAI whose requests end when the call is aborted. In
 * @langchain/google-genai 2.3 the non-streaming path calls `completionWithRetry(request)`
 * without the call's options, so neither the caller nor the SDK's fetch sees the abort
 * signal: our per-attempt timeout (retry.ts) would return while the HTTP request stayed
 * open. The signal is carried here to the one place that sends.
 */
export class AbortableChatGoogleGenerativeAI extends ChatGoogleGenerativeAI {
  override async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    return callSignal.run(options.signal, () => super._generate(messages, options, runManager));
  }

  override async completionWithRetry(...args: Parameters<ChatGoogleGenerativeAI["completionWithRetry"]>): ReturnType<ChatGoogleGenerativeAI["completionWithRetry"]> {
    const [request, options] = args;
    const res = await super.completionWithRetry(request, options ?? { signal: callSignal.getStore() });
    countThoughtsAsOutput(res.response.usageMetadata);
    return res;
  }
}

/**
 * Gemini 2.5 models think by default, and bill the thought tokens as output; the reply
 * states them apart (`usageMetadata.thoughtsTokenCount`, outside `candidatesTokenCount`),
 * and @langchain/google-genai 2.3 reads only the candidates into `output_tokens`. Folded in
 * here, the output tokens and their cost are what Google bills (`totalTokenCount` already
 * counts them).
 */
export function countThoughtsAsOutput(usage: { candidatesTokenCount?: number; thoughtsTokenCount?: number } | undefined): void {
  const thoughts = usage?.thoughtsTokenCount;
  if (!usage || typeof thoughts !== "number" || !Number.isFinite(thoughts) || thoughts <= 0) return;
  usage.candidatesTokenCount = (usage.candidatesTokenCount ?? 0) + thoughts;
  // Counted once, however often the response is read.
  usage.thoughtsTokenCount = 0;
}
