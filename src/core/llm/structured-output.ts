import type { ChatOpenAICallOptions } from "@langchain/openai";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import type { z } from "zod";
import type { Config } from "../config.js";

export type StructuredMethod = Config["llm"]["structuredOutput"];

/** What asks an OpenAI-compatible model for one schema's JSON, as ChatOpenAI call options. */
export type StructuredCallOptions = Pick<ChatOpenAICallOptions, "response_format" | "tools" | "tool_choice" | "ls_structured_output_format">;

/**
 * The call options `withStructuredOutput(schema, { method, name })` binds on a ChatOpenAI
 * model, rendered once per schema, name and method and handed to `invoke` directly — the
 * "bound response_format / tool" form docs/architecture.md#model-and-search-layers allows.
 *
 * Why not `withStructuredOutput` itself on our own models: in @langchain/openai 1.5.8 the
 * jsonSchema method converts the zod schema to JSON Schema again on every call (about 0.5 ms
 * of CPU), and the includeRaw pipeline wraps each call in four more runnables (a map, an
 * assign, fallbacks and the output parser, each with its own callback set-up); all of it
 * lands on the critical path when parallel calls return together. We validate every reply
 * with zod ourselves (model-client.ts), so the library's parse adds nothing. The request on
 * the wire is the same as the one withStructuredOutput sends (test/core/llm/structured-output.test.ts).
 */
export class StructuredOutputFormats {
  private readonly rendered = new WeakMap<z.ZodType, Map<string, StructuredCallOptions>>();

  /** `method`: the configured mode; a call may name another (the model's profile fell back from it). */
  constructor(private readonly method: StructuredMethod) {}

  callOptions(schema: z.ZodType, name: string, method: StructuredMethod = this.method): StructuredCallOptions {
    let byName = this.rendered.get(schema);
    if (!byName) {
      byName = new Map();
      this.rendered.set(schema, byName);
    }
    const key = `${method}|${name}`;
    let options = byName.get(key);
    if (!options) {
      options = renderCallOptions(method, schema, name);
      byName.set(key, options);
    }
    return options;
  }
}

/** JSON Schema's `description`, when the schema has one (it becomes the format's or tool's description). */
function describe(json: Record<string, unknown>): string | undefined {
  return typeof json.description === "string" ? json.description : undefined;
}

export function renderCallOptions(method: StructuredMethod, schema: z.ZodType, name: string): StructuredCallOptions {
  if (method === "jsonMode") {
    const json = toJsonSchema(schema) as Record<string, unknown>;
    return { response_format: { type: "json_object" }, ls_structured_output_format: { kwargs: { method: "json_mode" }, schema: { title: name, ...json } } };
  }
  if (method === "jsonSchema") {
    // As @langchain/openai renders a zod v4 schema for response_format (strict, refs for
    // cycles and reuse, the name as title), so that the provider sees the same request.
    const json = toJsonSchema(schema, {
      cycles: "ref",
      reused: "ref",
      override(ctx) {
        ctx.jsonSchema.title = name;
      },
    }) as Record<string, unknown>;
    const description = describe(json);
    return {
      response_format: { type: "json_schema", json_schema: { ...(description !== undefined ? { description } : {}), name, strict: true, schema: json } },
      ls_structured_output_format: { kwargs: { method: "json_schema" }, schema: { title: name, description, ...json } },
    };
  }
  const json = toJsonSchema(schema) as Record<string, unknown>;
  return {
    tools: [{ type: "function", function: { name, description: describe(json), parameters: json } }],
    tool_choice: { type: "function", function: { name } },
    ls_structured_output_format: { kwargs: { method: "function_calling" }, schema: { title: name, ...json } },
  };
}
