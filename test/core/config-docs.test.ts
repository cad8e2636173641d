import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { EnvSchema } from "../../src/core/config.js";
import { renderConfigDocs } from "../../scripts/generate-config-docs.js";

const doc = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");

describe("docs/configuration.md", () => {
  it("is what `npm run docs:config` generates from the schema now", () => {
    expect(doc).toBe(renderConfigDocs());
  });
  it("documents every variable the schema reads", () => {
    const missing = Object.keys(EnvSchema.shape).filter((name) => !doc.includes(`| \`${name}\` |`));
    expect(missing).toEqual([]);
  });
  it("gives every variable a description", () => {
    const bare = Object.entries(EnvSchema.shape).filter(([, s]) => !s.description).map(([n]) => n);
    expect(bare).toEqual([]);
  });
});
