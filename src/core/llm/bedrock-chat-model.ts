import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { ChatBedrockConverse } from "@langchain/aws";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";

/**
 * Amazon Bedrock through LangChain's own integration (@langchain/aws ChatBedrockConverse, the
 * Converse API). The runtime client is ours only to give it an endpoint (a VPC interface
 * endpoint, or a test server: ChatBedrockConverse's own `endpointHost` is always https) and
 * no retries of its own (ours is the only retry layer), over HTTP/1.1: the runtime client's
 * default HTTP/2 handler is there for its bidirectional streams, and Converse is one request,
 * one reply (a proxy or a VPC endpoint in between speaks HTTP/1.1 as well). Credentials are left to the AWS SDK's
 * default chain — environment keys, AWS_PROFILE and SSO, web identity, the container's or the
 * instance's IAM role — and every request is SigV4-signed with them: medmmv never holds an
 * AWS secret of its own.
 */
export function bedrockChatModel(o: { model: string; region: string; endpoint: string | null; temperature?: number; maxTokens?: number; timeoutMs: number }): BaseChatModel {
  const client = new BedrockRuntimeClient({
    region: o.region,
    ...(o.endpoint ? { endpoint: o.endpoint } : {}),
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ requestTimeout: o.timeoutMs }),
  });
  return new ChatBedrockConverse({
    model: o.model,
    region: o.region,
    client,
    streaming: false,
    ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
    ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
  });
}
