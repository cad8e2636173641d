import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ApiKeys } from "../../../src/server/http/auth.js";
import { errorBody, STATUS_BY_CODE, toHttpError } from "../../../src/server/http/errors.js";
import { MedmmvError, type ErrorCode } from "../../../src/core/contracts/errors.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";

describe("ApiKeys", () => {
  it("maps a valid key to the sha256 of the key and refuses others", () => {
    const keys = new ApiKeys(["alpha", "bravo"]);
    expect(keys.enabled).toBe(true);
    expect(keys.verify("bravo")).toBe(createHash("sha256").update("bravo").digest("hex"));
    expect(keys.verify("alpha")).not.toBe(keys.verify("bravo"));
    expect(keys.verify("alph")).toBeNull();
    expect(keys.verify("")).toBeNull();
    expect(new ApiKeys([]).enabled).toBe(false);
  });
});

describe("toHttpError", () => {
  const config = scriptedConfig("http://127.0.0.1:9/v1");
  it("maps every error code, and shows 5xx clients only a generic message (but the model-configuration fix)", () => {
    for (const code of Object.keys(STATUS_BY_CODE) as ErrorCode[]) {
      const h = toHttpError(new MedmmvError(code, `secret internals of ${code}`, { details: { caseId: "c1" } }), config);
      expect(h.status).toBe(STATUS_BY_CODE[code]);
      const body = errorBody(h, "req-1");
      if (code === "MODEL_NOT_CONFIGURED" || code === "QUOTA_EXCEEDED") {
        // The 5xx whose message is shown: it names what the operator must do (the variables to set, assertLlmConfigured;
        // credit to add with the provider: "try again later" would be wrong), never values or the provider's words.
        expect(body.message).toBe(`secret internals of ${code}`);
        expect(body.details).toBeUndefined();
      } else if (h.status >= 500) {
        expect(body.message).not.toContain("secret internals");
        expect(body.details).toBeUndefined();
      } else {
        expect(body.message).toBe(`secret internals of ${code}`);
        expect(body.details).toEqual({ caseId: "c1" });
      }
    }
    expect(toHttpError(new TypeError("x is undefined"), config)).toMatchObject({ status: 500, code: "INTERNAL" });
    expect(toHttpError(new MedmmvError("UNAUTHORIZED", "no"), config).headers).toEqual({ "www-authenticate": 'Bearer realm="medmmv"' });
    const parse = toHttpError(Object.assign(new SyntaxError(`Unexpected token 'P', "Patient Jane Doe" is not valid JSON at position 3`), { statusCode: 400 }), config);
    expect(parse).toMatchObject({ status: 400, code: "INVALID_INPUT" });
    expect(parse.message).toContain("position 3");
    expect(parse.message).not.toContain("Jane");
  });
});
