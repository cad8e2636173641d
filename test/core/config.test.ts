import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertLlmConfigured, loadConfig } from "../../src/core/config.js";
import { pipelineOptions } from "../../src/core/workflow/pipeline.js";
import { MedmmvError } from "../../src/core/contracts/errors.js";

describe("loadConfig", () => {
  it("documented defaults with an empty environment; empty strings count as unset", () => {
    const c = loadConfig({ MEDMMV_K: "", OPENAI_BASE_URL: "" });
    expect(c.pipeline).toEqual({ k: 5, maxRepairs: 3, adaptive: false, composeReply: false, weights: [1, 1, 1], caseBudget: { maxTokens: null, maxCostUsd: null } });
    expect(c.terminology).toEqual({ url: null, valueSet: "http://snomed.info/sct?fhir_vs=isa/404684003", timeoutMs: 5000 });
    expect(c.llm).toMatchObject({ baseUrl: null, structuredOutput: "jsonSchema", cache: "deterministic", maxConcurrency: 16, rolloutTemperature: 0.7 });
    expect(c.search.provider).toBe("none");
  });

  it("MEDMMV_ADAPTIVE sets the default that a request or flag may still override", () => {
    for (const on of ["true", "1"]) expect(loadConfig({ MEDMMV_ADAPTIVE: on }).pipeline.adaptive).toBe(true);
    for (const off of ["false", "0"]) expect(loadConfig({ MEDMMV_ADAPTIVE: off }).pipeline.adaptive).toBe(false);
    const c = loadConfig({ MEDMMV_ADAPTIVE: "true" });
    expect(pipelineOptions(c).adaptive).toBe(true);
    expect(pipelineOptions(c, { adaptive: false }).adaptive).toBe(false);
  });

  it("a bad value is CONFIG_INVALID naming the variable", () => {
    for (const [name, value] of [["MEDMMV_ADAPTIVE", "yes"], ["MEDMMV_K", "0"], ["MEDMMV_CACHE", "always"], ["OPENAI_BASE_URL", "not a url"]]) {
      let err: unknown;
      try {
        loadConfig({ [name!]: value });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(MedmmvError);
      expect((err as MedmmvError).code).toBe("CONFIG_INVALID");
      expect((err as MedmmvError).message).toContain(name);
    }
  });

  it("assertLlmConfigured names what is missing", () => {
    expect(() => assertLlmConfigured(loadConfig({}))).toThrow(/MEDMMV_MODEL and OPENAI_BASE_URL/);
    expect(() => assertLlmConfigured(loadConfig({ OPENAI_BASE_URL: "http://127.0.0.1:9/v1", MEDMMV_MODEL: "m" }))).not.toThrow();
  });
});

describe("Azure OpenAI and tracing variables", () => {
  it("AZURE_OPENAI_API_KEY selects Azure; the deployment name stands in for MEDMMV_MODEL; no OpenAI endpoint needed", () => {
    const c = loadConfig({ AZURE_OPENAI_API_KEY: "k", AZURE_OPENAI_API_INSTANCE_NAME: "res", AZURE_OPENAI_API_DEPLOYMENT_NAME: "gpt-4o-dep", MEDMMV_JUDGE_MODEL: "judge-dep" });
    expect(c.llm.azure).toEqual({ apiKey: "k", instanceName: "res", endpoint: null, apiVersion: "2024-10-21" });
    expect(c.llm.models).toEqual({ executor: "gpt-4o-dep", vision: "gpt-4o-dep", judge: "judge-dep" });
    expect(() => assertLlmConfigured(c)).not.toThrow();
    expect(loadConfig({ AZURE_OPENAI_API_KEY: "k", AZURE_OPENAI_ENDPOINT: "https://res.openai.azure.com/" }).llm.azure?.endpoint).toBe("https://res.openai.azure.com");
  });

  it("without the Azure key nothing Azure applies; LANGSMITH_TRACING=true is noted, anything else is off", () => {
    const c = loadConfig({ AZURE_OPENAI_API_DEPLOYMENT_NAME: "dep" });
    expect(c.llm.azure).toBeNull();
    expect(c.llm.models.executor).toBeNull();
    expect(c.llm.tracing).toBe(false);
    expect(loadConfig({ LANGSMITH_TRACING: "true" }).llm.tracing).toBe(true);
    expect(loadConfig({ LANGSMITH_TRACING: "false" }).llm.tracing).toBe(false);
  });
});

describe("CDS Hooks configuration", () => {
  it("a JWKS without MEDMMV_PUBLIC_URL is a configuration error: the JWT audience never comes from the request", () => {
    expect(() => loadConfig({ MEDMMV_CDS_JWKS: "/etc/ehr-jwks.json", MEDMMV_CDS_ISSUERS: "https://ehr.example.org" })).toThrow(/MEDMMV_PUBLIC_URL/);
    expect(loadConfig({ MEDMMV_CDS_JWKS: "/etc/ehr-jwks.json", MEDMMV_CDS_ISSUERS: "https://ehr.example.org", MEDMMV_PUBLIC_URL: "https://medmmv.example.org/" }).cds.publicUrl).toBe("https://medmmv.example.org");
  });

  it("one JWKS for several issuers is refused (any of their keys could sign as any of them); a file gives each its own", () => {
    const base = { MEDMMV_PUBLIC_URL: "https://medmmv.example.org" };
    expect(() => loadConfig({ ...base, MEDMMV_CDS_JWKS: "/etc/jwks.json", MEDMMV_CDS_ISSUERS: "https://a,https://b" })).toThrow(/MEDMMV_CDS_ISSUERS_FILE/);
    const dir = mkdtempSync(join(tmpdir(), "medmmv-issuers-"));
    try {
      const file = join(dir, "issuers.json");
      writeFileSync(file, JSON.stringify([{ iss: "https://a", jwks: "/etc/a.json", tenant: "clinic-a" }, { iss: "https://b", jwks: "https://b/jwks", tenant: "clinic-b" }]));
      expect(loadConfig({ ...base, MEDMMV_CDS_ISSUERS_FILE: file }).cds.issuerKeys).toEqual([
        { iss: "https://a", jwks: "/etc/a.json", tenant: "clinic-a" },
        { iss: "https://b", jwks: "https://b/jwks", tenant: "clinic-b" },
      ]);
      writeFileSync(file, JSON.stringify([{ iss: "https://a", jwks: "/etc/a.json", tenant: "t" }, { iss: "https://a", jwks: "/etc/b.json", tenant: "t" }]));
      expect(() => loadConfig({ ...base, MEDMMV_CDS_ISSUERS_FILE: file })).toThrow(/\[1\] repeats iss/);
      // one JWKS for two issuers, however it is spelled: EHR A's key could sign as EHR B
      writeFileSync(file, JSON.stringify([{ iss: "https://a", jwks: "https://keys.example/jwks", tenant: "t1" }, { iss: "https://b", jwks: "HTTPS://KEYS.example:443/jwks", tenant: "t2" }]));
      expect(() => loadConfig({ ...base, MEDMMV_CDS_ISSUERS_FILE: file })).toThrow(/\[1\] repeats jwks/);
      writeFileSync(file, JSON.stringify([{ iss: "https://a", jwks: "/etc/medmmv/jwks.json", tenant: "t1" }, { iss: "https://b", jwks: "/etc/medmmv/../medmmv/jwks.json", tenant: "t2" }]));
      expect(() => loadConfig({ ...base, MEDMMV_CDS_ISSUERS_FILE: file })).toThrow(/\[1\] repeats jwks/);
      // keys over http can be swapped on the way
      writeFileSync(file, JSON.stringify([{ iss: "https://a", jwks: "http://keys.example/jwks", tenant: "t1" }]));
      expect(() => loadConfig({ ...base, MEDMMV_CDS_ISSUERS_FILE: file })).toThrow(/\[0\]\.jwks: must be an https URL/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("MEDMMV_API_KEYS_FILE", () => {
  it("reads digests with ids, tenants and roles, and names the entry at fault without printing it", () => {
    const dir = mkdtempSync(join(tmpdir(), "medmmv-keys-"));
    try {
      const file = join(dir, "keys.json");
      const digest = "A".repeat(64);
      writeFileSync(file, JSON.stringify([{ id: "qa-1", sha256: digest, tenant: "clinic", roles: ["auditor", "auditor"] }]));
      expect(loadConfig({ MEDMMV_API_KEYS_FILE: file }).http.keyFile).toEqual([{ id: "qa-1", sha256: "a".repeat(64), tenant: "clinic", roles: ["auditor"] }]);
      writeFileSync(file, JSON.stringify([{ id: "qa-1", sha256: "not-a-digest", tenant: "clinic", roles: ["auditor"] }]));
      expect(() => loadConfig({ MEDMMV_API_KEYS_FILE: file })).toThrow(/\[0\]\.sha256.*SHA-256/);
      writeFileSync(file, JSON.stringify([{ id: "qa-1", sha256: digest, tenant: "clinic", roles: ["root"] }]));
      expect(() => loadConfig({ MEDMMV_API_KEYS_FILE: file })).toThrow(/roles/);
      expect(() => loadConfig({ MEDMMV_API_KEYS_FILE: join(dir, "missing.json") })).toThrow(/cannot read/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
