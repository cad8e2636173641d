import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { openStore } from "../../../src/server/store/open-store.js";
import { prepareImage } from "../../../src/core/intake/images.js";

/** Image bytes stay out of the workflow state: checkpoints hold references, not copies. */
let model: ScriptedOpenAI;
let dir: string;
beforeAll(async () => {
  model = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "C"], identicalReasoning: false }) });
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-ckpt-"));
});
afterAll(async () => {
  await model.close();
  await rm(dir, { recursive: true, force: true });
});

describe("checkpoints and images", () => {
  it("no checkpoint carries the image bytes, and the image still reaches the model", async () => {
    const cfg = scriptedConfig(model.baseUrl, { MEDMMV_DATA_DIR: dir });
    const store = await openStore(cfg.store);
    // A PNG with a recognisable run of bytes in its base64.
    const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==", "base64");
    const image = await prepareImage({ id: "img1", data: png.toString("base64") }, { maxBytes: 1e6, maxPixels: 1e6, allowPath: false });
    const c = { ...chestPainCase("ckpt-case"), images: [image] };
    const pipeline = new Pipeline(cfg, { checkpointer: store.checkpointer() });
    const { result } = await pipeline.run(c, pipelineOptions(cfg));
    expect(result.status).toBe("completed");
    expect(model.stats().log.some((l) => l.agent === "image-doctor" && l.images === 1)).toBe(true);
    expect(pipeline.images.size).toBe(0); // released after the run
    await store.close();

    const db = new Database(path.join(dir, "medmmv.sqlite"), { readonly: true });
    const needle = image.data.slice(8, 48);
    let rows = 0;
    for (const table of ["checkpoints", "writes"]) {
      for (const row of db.prepare(`SELECT * FROM ${table}`).all() as Record<string, unknown>[]) {
        rows++;
        for (const v of Object.values(row)) {
          const text = Buffer.isBuffer(v) ? v.toString("utf8") : String(v);
          expect(text.includes(needle)).toBe(false);
        }
      }
    }
    db.close();
    expect(rows).toBeGreaterThan(5);
  });
});
