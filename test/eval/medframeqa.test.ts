import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { runEval } from "../../src/eval/runner.js";
import { summaryMarkdown } from "../../src/eval/report.js";
import { answerByItem, evalScenario, fakeImages, readItems } from "./eval-fixtures.js";

const FIXTURE = fileURLToPath(new URL("../fixtures/medframeqa-synthetic/medframeqa_synthetic.jsonl", import.meta.url));
const FRAMES = ["synthetic-a-1.jpg", "synthetic-a-2.jpg", "synthetic-a-3.jpg", "synthetic-b-1.png", "synthetic-b-2.png", ...[1, 2, 3, 4, 5].map((i) => `synthetic-c-${i}.png`), "synthetic-d-1.png", "synthetic-d-2.png"];

const servers = useScriptedServers({ scenario: evalScenario({}) });
let tmp: string;
let images: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-medframeqa-"));
  images = path.join(tmp, "frames");
  await fakeImages(images, FRAMES);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("--dataset medframeqa (synthetic records in the published layout)", () => {
  it("reads 2–5 frames in order, named by frame number, from image[].path, image_url, image_hash or image_1…; the key as a letter or an option's text; strata by system, organ, modality and frames", async () => {
    const items = await readItems("medframeqa", FIXTURE, { imagesDir: images });
    expect(items.map((i) => i.id)).toEqual(["synthetic-0001", "synthetic-0002", "synthetic-0003", "synthetic-0004"]);
    const [a, b, c, d] = items;
    expect(a!.case.images!.map((i) => [i.id, path.basename(i.path!)])).toEqual([
      ["frame 1 of 3", "synthetic-a-1.jpg"],
      ["frame 2 of 3", "synthetic-a-2.jpg"],
      ["frame 3 of 3", "synthetic-a-3.jpg"],
    ]);
    expect(a!.case.options).toMatchObject({ A: "It shrinks, indicating resolution", D: "It becomes echogenic, indicating clot" });
    expect(a!.gold).toEqual({ kind: "choice", option: "B", text: "It enlarges with diastolic collapse of the right ventricle, indicating tamponade physiology" });
    expect(a!.strata).toEqual({ system: "Cardiovascular", organ: "Heart", modality: "Ultrasound", frames: "3", images: "present" });
    expect(b!.case.images!.map((i) => path.basename(i.path!))).toEqual(["synthetic-b-1.png", "synthetic-b-2.png"]);
    // By hash, with the extension found on disk; the key given as the option's text.
    expect(c!.case.images!.map((i) => path.basename(i.path!))).toEqual([1, 2, 3, 4, 5].map((i) => `synthetic-c-${i}.png`));
    expect(c!.gold.option).toBe("A");
    // The first release's columns.
    expect(d!.case.images!.map((i) => i.id)).toEqual(["frame 1 of 2", "frame 2 of 2"]);
    expect(d!.gold.option).toBe("B");
    // The rationale is the authors' reference, never part of what the model is shown.
    expect(JSON.stringify(items.map((i) => i.case))).not.toMatch(/synthetic rationale/);
  });

  it("a multi-image run sends every frame in order and breaks the results down by organ and modality", async () => {
    const items = await readItems("medframeqa", FIXTURE, { imagesDir: images });
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it) => (it.strata["modality"] === "CT" ? "gold" : "wrong")) }));
    const before = servers.model.stats().log.length;
    const r = await runEval({ dataset: "medframeqa", input: FIXTURE, images, method: "cot", out: path.join(tmp, "run") }, { config: servers.config(), progress: null });
    expect(r.summary).toMatchObject({ records: 4, correct: 2, failed: 0 });
    // The scripted model found each item by its question and its image ids in order ("frame 1 of 3; frame 2 of 3; …"): the frames went in order.
    const calls = servers.model.stats().log.slice(before);
    expect(calls.map((c) => c.images).sort()).toEqual([2, 2, 3, 5]);
    expect(r.summary.strata["modality"]).toMatchObject({ CT: { n: 2, correct: 2 }, Ultrasound: { n: 1, correct: 0 }, MRI: { n: 1, correct: 0 } });
    expect(r.summary.strata["organ"]).toMatchObject({ Heart: { n: 1, correct: 0 }, Lung: { n: 1, correct: 1 }, Aorta: { n: 1, correct: 1 }, Knee: { n: 1, correct: 0 } });
    expect(summaryMarkdown(r.summary)).toMatch(/organ/);
  });
});
