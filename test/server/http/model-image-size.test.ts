// Uses app.inject: a case with a large photograph, the vision model's request, and the audit view.
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { ScriptFn } from "../../../src/scripted/scripted-openai-server.js";
import { chestPain } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

/** Every image URL each vision-model call carried, in call order. */
const seenByModel: string[][] = [];
let t: InjectServer;
let photo: Buffer;

beforeAll(async () => {
  const base = clinicalScenario({ rolloutAnswers: ["B", "B", "B"] });
  const imageDoctor = base.agents["image-doctor"] as ScriptFn;
  const scenario = {
    ...base,
    agents: {
      ...base.agents,
      "image-doctor": (req: Parameters<ScriptFn>[0]) => {
        seenByModel.push(req.images);
        return imageDoctor(req);
      },
    },
  };
  t = await startInjectServer({ scenario, env: { MEDMMV_IMAGE_MODEL_LONG_SIDE: "1024", MEDMMV_VIEW_LINK_SECRET: "a-test-secret-of-enough-length-0123456789" } });
  // Synthetic: a 4000×3000 photograph-sized JPEG (a smooth field with a bright square).
  photo = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: { r: 60, g: 70, b: 80 } } })
    .composite([{ input: { create: { width: 800, height: 600, channels: 3, background: { r: 230, g: 230, b: 230 } } }, left: 1600, top: 1200 }])
    .jpeg({ quality: 80 })
    .toBuffer();
});
afterAll(() => t.close());

describe("images at the size the model uses", () => {
  it("sends a 4000×3000 JPEG to the model at the configured long side, keeping aspect; the store and the audit view keep the original", async () => {
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "photo", caption: "Clinical photograph", data: photo.toString("base64") }] }) });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());

    expect(seenByModel.length).toBeGreaterThan(0);
    for (const urls of seenByModel) {
      expect(urls).toHaveLength(1);
      const [, mime, b64] = /^data:([^;]+);base64,(.*)$/s.exec(urls[0]!)!;
      expect(mime).toBe("image/jpeg");
      const sent = await sharp(Buffer.from(b64!, "base64")).metadata();
      expect([sent.width, sent.height]).toEqual([1024, 768]);
    }

    // The store holds the original bytes under the original's hash.
    const view = (await (await t.api(`/cases/${result.caseId}`)).json()) as { case: { images: Array<{ sha256: string }> } };
    const stored = await t.store.getImage(view.case.images[0]!.sha256);
    expect(Buffer.from(stored!.data, "base64").equals(photo)).toBe(true);
    expect([stored!.width, stored!.height]).toEqual([4000, 3000]);

    // The audit view draws the original, not the model's copy.
    const html = await (await t.api(`/cases/${result.caseId}/view`)).text();
    expect(html).toContain(`data:image/jpeg;base64,${photo.toString("base64")}`);
  });
});
