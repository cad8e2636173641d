/**
 * The native provider endpoints the scripted server also answers, beside chat completions:
 * Anthropic's Messages API, Gemini's generateContent, Amazon Bedrock's Converse API and Vertex AI's
 * generateContent (Gemini) and rawPredict (Claude) with its token exchange (served over TLS too: scripted-tls-front.ts). All translate to and from the
 * scripted chat-completions route (vendor-relay.ts), so one scenario drives every provider.
 */
import type http from "node:http";
import { ANTHROPIC_MESSAGES_PATH, ScriptedAnthropicRoutes } from "./scripted-anthropic-routes.js";
import { GEMINI_PATH, ScriptedGeminiRoutes } from "./scripted-gemini-routes.js";
import { BEDROCK_CONVERSE_PATH, ScriptedBedrockRoutes } from "./scripted-bedrock-routes.js";
import { ScriptedVertexRoutes, VERTEX_GENERATE_PATH, VERTEX_RAW_PREDICT_PATH, VERTEX_TOKEN_PATH } from "./scripted-vertex-routes.js";

export class ScriptedVendorRoutes {
  readonly anthropic: ScriptedAnthropicRoutes;
  readonly gemini: ScriptedGeminiRoutes;
  readonly bedrock: ScriptedBedrockRoutes;
  readonly vertex: ScriptedVertexRoutes;

  /** `chatUrl`: the scripted chat-completions route of the same server (known once it listens). */
  constructor(chatUrl: () => string) {
    this.anthropic = new ScriptedAnthropicRoutes(chatUrl);
    this.gemini = new ScriptedGeminiRoutes(chatUrl);
    this.bedrock = new ScriptedBedrockRoutes(chatUrl);
    this.vertex = new ScriptedVertexRoutes(chatUrl);
  }

  /** Answers the request when it is one of these endpoints' (true), else leaves it untouched (false). */
  async handle(req: http.IncomingMessage, res: http.ServerResponse, path: string): Promise<boolean> {
    if (path === ANTHROPIC_MESSAGES_PATH) {
      await this.anthropic.handle(req, res);
      return true;
    }
    const bedrock = BEDROCK_CONVERSE_PATH.exec(path);
    if (bedrock) {
      await this.bedrock.handle(req, res, decodeURIComponent(bedrock[1]!));
      return true;
    }
    const vertex = VERTEX_GENERATE_PATH.exec(path);
    if (vertex) {
      await this.vertex.handle(req, res, decodeURIComponent(vertex[1]!), decodeURIComponent(vertex[2]!), decodeURIComponent(vertex[3]!));
      return true;
    }
    const claude = VERTEX_RAW_PREDICT_PATH.exec(path);
    if (claude) {
      await this.vertex.handleRawPredict(req, res, decodeURIComponent(claude[1]!), decodeURIComponent(claude[2]!), decodeURIComponent(claude[3]!));
      return true;
    }
    if (path === VERTEX_TOKEN_PATH) {
      await this.vertex.handleToken(req, res);
      return true;
    }
    const gemini = GEMINI_PATH.exec(path);
    if (gemini) {
      await this.gemini.handle(req, res, decodeURIComponent(gemini[2]!));
      return true;
    }
    return false;
  }

  reset(): void {
    this.anthropic.reset();
    this.gemini.reset();
    this.bedrock.reset();
    this.vertex.reset();
  }
}

/**
 * The base URL the Anthropic and Gemini clients take for a scripted server (they add
 * /v1/messages and /v1beta/models/… themselves): its chat-completions base URL without /v1.
 */
export function scriptedOrigin(openaiBaseUrl: string): string {
  return openaiBaseUrl.replace(/\/v1\/?$/, "");
}
