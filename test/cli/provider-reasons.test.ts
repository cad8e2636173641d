import { describe, expect, it } from "vitest";
import { printProviderReasons } from "../../src/cli/provider-reasons.js";

/** The provider's text reaches the operator's terminal as text: no escape sequence, no bidi override, no bell. */
describe("printProviderReasons", () => {
  it("strips control and format characters before printing, once per distinct reason", () => {
    const lines: string[] = [];
    const h = printProviderReasons((l) => lines.push(l));
    const hostile = "bad request\u001b]0;pwned\u0007 \u001b[2J\u001b[31mred\u001b[0m \u202eevil\u202c\r\nforged line";
    h.handleLLMError!(Object.assign(new Error(hostile), { status: 400 }), "r1", undefined, ["medmmv.judge"]);
    h.handleLLMError!(Object.assign(new Error(hostile), { status: 400 }), "r2", undefined, ["medmmv.judge"]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe("medmmv: judge: the provider said (HTTP 400): bad request ]0;pwned [2J [31mred [0m evil forged line\n");
    expect(lines[0]!.slice(0, -1)).not.toMatch(/[\p{Cc}\p{Cf}]/u);
  });
});
