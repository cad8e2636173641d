import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/core/config.js";
import { createLogger } from "../../../src/server/http/logger.js";
import { providerFailureLog, providerText, promptEcho } from "../../../src/server/provider-failure-log.js";
import { chestPain, LogCapture } from "../http/http-harness.js";

/**
 * A provider's error text that quotes the prompt (in any quoting, or none) leaves no patient
 * identifier in the server log; the provider's own words stay.
 */
const NOTES = `${chestPain().notes} Patient John O'Brien, MRN 48213377, born 1961-02-03, lives at 12 Harbour Lane.`;
const IDENTIFIERS = ["John", "Brien", "48213377", "1961", "Harbour"];
const SYSTEM = "You are a careful clinician. Answer with the option letter. The case is between the fences.";

const ECHOES: Array<[string, string]> = [
  ["straight quotes around a name with an apostrophe", `Invalid 'messages[1].content': 'Patient John O'Brien, MRN 48213377, born 1961-02-03' is not allowed`],
  ["double quotes", `Invalid value "Patient John O'Brien, MRN 48213377" in request`],
  ["curly quotes (the apostrophe curly too)", `Content rejected: “Patient John O’Brien, MRN 48213377, born 1961-02-03” violates policy`],
  ["curly single quotes", `Content rejected: ‘Patient John O’Brien, MRN 48213377’ violates policy`],
  ["guillemets", `Rejected «John O'Brien 48213377» (policy)`],
  ["an unquoted echo", `Request rejected: Patient John O'Brien, MRN 48213377, born 1961-02-03, lives at 12 Harbour Lane. upstream overloaded`],
  ["single words echoed alone", `user Brien not permitted; id 48213377 unknown; Harbour blocked`],
  ["fullwidth look-alikes", `Ｊｏｈｎ Ｏ'Ｂｒｉｅｎ ４８２１３３７７ rejected`],
];

describe("the provider's error text in the server log", () => {
  const sent = promptEcho([SYSTEM, `Question: ${chestPain().question}\n<<<CASE\n${NOTES}\nCASE>>>`]);

  for (const [style, message] of ECHOES) {
    it(`holds no identifier of the prompt: ${style}`, () => {
      const logged = providerText(message, sent);
      for (const id of IDENTIFIERS) expect(logged.normalize("NFKC"), `${id} in ${logged}`).not.toContain(id);
    });
  }

  it("removes a lone lower-case word of the prompt too (a diagnosis, a drug, a surname written small)", () => {
    const echo = promptEcho(["History of hiv on tenofovir; seen by dr obrien."]);
    const logged = providerText("content flagged: hiv, tenofovir, obrien", echo);
    expect(logged).not.toMatch(/hiv|tenofovir|obrien/i);
    expect(logged).toMatch(/^content flagged: \[from the prompt\]/);
  });

  it("keeps the provider's own words", () => {
    expect(providerText("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", sent)).toMatch(/maximum context length is 8192 tokens/);
    expect(providerText(ECHOES[5]![1], sent)).toMatch(/Request rejected: \[from the prompt\].*upstream overloaded/);
    expect(providerText("upstream says: deployment gpu-17.internal.example overloaded", sent)).toBe("upstream says: deployment gpu-17.internal.example overloaded");
  });

  it("strips control characters (terminal escapes) and, with the prompt unknown, logs only a length", () => {
    expect(providerText("bad \u001b[31mred\u001b[0m \u0007request", sent)).toBe("bad [31mred [0m request");
    expect(providerText("Patient John O'Brien", null)).toBe("[provider text withheld: 20 characters]");
  });

  it("the LangChain handler matches each failed run to the prompt its run sent", () => {
    const capture = new LogCapture();
    const handler = providerFailureLog(loadConfig({ OPENAI_BASE_URL: "http://127.0.0.1:9/v1" }), createLogger("debug", capture));
    const messages = [[new SystemMessage(SYSTEM), new HumanMessage({ content: [{ type: "text", text: NOTES }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] })]];
    for (const [i, [, message]] of ECHOES.entries()) {
      handler.handleChatModelStart!({} as never, messages, `run-${i}`);
      handler.handleLLMError!(Object.assign(new Error(message), { status: 400 }), `run-${i}`, undefined, ["medmmv.text-doctor"]);
    }
    const lines = capture.lines().filter((l) => l.msg === "model call failed");
    expect(lines).toHaveLength(ECHOES.length);
    for (const id of IDENTIFIERS) expect(capture.text().normalize("NFKC")).not.toContain(id);
    expect(lines[0]).toMatchObject({ status: 400, agent: "text-doctor", endpoint: "http://127.0.0.1:9/v1" });
  });

  it("names the endpoint the call went to (a provider's own, from the run's metadata), not the OpenAI-compatible one", () => {
    const capture = new LogCapture();
    const handler = providerFailureLog(loadConfig({ OPENAI_BASE_URL: "http://127.0.0.1:9/v1" }), createLogger("debug", capture));
    const bedrock = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse";
    handler.handleChatModelStart!({} as never, [[new HumanMessage("hello")]], "run-b", undefined, undefined, undefined, { endpoint: bedrock });
    handler.handleLLMError!(Object.assign(new Error("Too many requests"), { name: "ThrottlingException", $metadata: { httpStatusCode: 429 } }), "run-b", undefined, ["medmmv.rollout"]);
    expect(capture.lines().find((l) => l.msg === "model call failed")).toMatchObject({ endpoint: bedrock, agent: "rollout", type: "ThrottlingException", status: 429 });
  });
});
