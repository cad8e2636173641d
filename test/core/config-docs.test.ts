import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { EnvSchema } from "../../src/core/config.js";
import { DOC_PATH, renderDoc } from "../../scripts/generate-config-docs.js";

describe("docs/configuration.md", () => {
  const doc = readFileSync(DOC_PATH, "utf8");

  it("is what `npm run docs:config` writes from the schema", () => {
    expect(doc, "docs/configuration.md is stale: run `npm run docs:config` and commit the result").toBe(renderDoc(doc));
  });

  it("names every variable of the env schema", () => {
    const missing = Object.keys(EnvSchema.shape).filter((name) => !doc.includes(`| \`${name}\` |`));
    expect(missing, `variables missing from docs/configuration.md: ${missing.join(", ")}`).toEqual([]);
  });

  it("every variable has a description", () => {
    const undescribed = Object.entries(EnvSchema.shape).filter(([, s]) => !s.description).map(([n]) => n);
    expect(undescribed).toEqual([]);
  });
});
