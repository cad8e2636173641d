import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { renderCallOptions, StructuredOutputFormats, type StructuredMethod } from "../../../src/core/llm/structured-output.js";
import { LlmClient } from "../../../src/core/llm/model-client.js";
import { FairLimiter } from "../../../src/core/llm/limiter.js";
import { CallChain, UsageMeter } from "../../../src/core/llm/usage.js";
import { HdOutput } from "../../../src/core/agents/hd-supervisor.js";
import { PathOutput } from "../../../src/core/contracts/reasoning-path.js";
import { TextDoctorOutput } from "../../../src/core/agents/text-doctor.js";

/**
 * Our own ChatOpenAI models get structured output as call options rendered once
 * (structured-output.ts) instead of through withStructuredOutput on every call. The
 * provider must not be able to tell: the request body is compared, byte for byte, with
 * the one withStructuredOutput sends, for every method and for real agent schemas.
 */
const Described = z.object({ answer: z.string().describe("option letter"), confidence: z.number().min(0).max(1) }).describe("the diagnosis");
const SCHEMAS: Array<[string, z.ZodType]> = [
  ["hd_supervisor", HdOutput],
  ["reasoning_path", PathOutput],
  ["text_doctor", TextDoctorOutput],
  ["diagnosis", Described],
];
const METHODS: StructuredMethod[] = ["jsonSchema", "functionCalling", "jsonMode"];

let server: ScriptedOpenAI;
const bodies: string[] = [];

beforeAll(async () => {
  server = await startScriptedOpenAI({
    scenario: {
      agents: {
        probe: (req) => {
          bodies.push(JSON.stringify(req.body));
          return { answer: "A", confidence: 0.5 };
        },
      },
    },
  });
});
afterAll(() => server.close());
beforeEach(() => {
  bodies.length = 0;
});

const messages = [new SystemMessage("medmmv-agent: probe\nAnswer as JSON."), new HumanMessage("Which option?")];
const model = () => new ChatOpenAI({ model: "scripted", apiKey: "k", maxRetries: 0, temperature: 0, configuration: { baseURL: server.baseUrl } });

describe("structured-output call options", () => {
  for (const method of METHODS)
    for (const [name, schema] of SCHEMAS)
      it(`${method}, ${name}: the request is the one withStructuredOutput sends`, async () => {
        const m = model();
        // The library's own parse of the scripted reply may refuse it (it is not this schema's
        // shape); only the request matters here.
        await m
          .withStructuredOutput(schema, { name, method, includeRaw: true })
          .invoke(messages)
          .catch(() => undefined);
        await m.invoke(messages, renderCallOptions(method, schema, name));
        expect(bodies).toHaveLength(2);
        expect(JSON.parse(bodies[1]!)).toEqual(JSON.parse(bodies[0]!));
        expect(bodies[1]).toBe(bodies[0]);
      });

  it("renders each schema and name once, and a different name separately", () => {
    const formats = new StructuredOutputFormats("jsonSchema");
    const first = formats.callOptions(Described, "diagnosis");
    expect(formats.callOptions(Described, "diagnosis")).toBe(first);
    const other = formats.callOptions(Described, "verdict");
    expect(other).not.toBe(first);
    expect((other.response_format as { json_schema: { name: string } }).json_schema.name).toBe("verdict");
  });

  for (const method of METHODS)
    it(`${method}: LlmClient sends that request and validates the reply itself`, async () => {
      const cfg = scriptedConfig(server.baseUrl, { MEDMMV_STRUCTURED_OUTPUT: method });
      const client = new LlmClient(cfg.llm, new FairLimiter(2));
      const meter = new UsageMeter();
      const out = await client.structured(
        { role: "judge", agent: "probe", schema: Described, schemaName: "diagnosis", temperature: 0, messages: [{ role: "system", content: "medmmv-agent: probe\nAnswer as JSON." }, { role: "user", content: "Which option?" }] },
        { caseKey: "c1", meter, chain: new CallChain(meter) },
      );
      expect(out).toEqual({ answer: "A", confidence: 0.5 });
      const sent = JSON.parse(bodies[0]!) as Record<string, unknown>;
      const expected = renderCallOptions(method, Described, "diagnosis");
      if (method === "functionCalling") {
        expect((sent.tools as Array<{ function: { name: string } }>)[0]!.function.name).toBe("diagnosis");
        expect(sent.tool_choice).toEqual(expected.tool_choice);
      } else expect(sent.response_format).toEqual(JSON.parse(JSON.stringify(expected.response_format)));
    });
});
