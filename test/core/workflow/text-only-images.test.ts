import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI, type ScriptFn, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { Pipeline, pipelineOptions, type PipelineOverrides } from "../../../src/core/workflow/pipeline.js";
import { forgetAdaptations } from "../../../src/core/llm/model-adaptation.js";
import { summariseAnswer } from "../../../src/server/view/answer-state.js";
import { twoImageCase } from "../../support/two-image-case.js";
import { formatSummary } from "../../../src/cli/format-summary.js";

/**
 * A case with images whose executor and judge run on a text-only model: DeepSeek's chat API
 * (the scripted server's `deepseek` profile refuses any image part 400, as DeepSeek does;
 * `deepseek-chat` is text-only in the catalog, so its profile says imagesPerRequest 0). With a
 * vision model on its own endpoint, the images are described by it once per case and the
 * description goes to the text-only calls in their place; with none, the case runs text-only
 * and says the images were not examined.
 */
const servers = useScriptedServers();
/** The vision role's own endpoint: a server that takes images (OpenAI's rules). */
let vision: ScriptedOpenAI;

beforeAll(async () => {
  vision = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B"] }) });
});
afterAll(async () => {
  await vision.close();
});
beforeEach(() => {
  forgetAdaptations();
  vision.reset();
  servers.model.setProvider("deepseek");
  servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
});

let cases = 0;
async function runCase(env: Record<string, string>, overrides: PipelineOverrides = {}) {
  const cfg = servers.config({ MEDMMV_MODEL: "deepseek-chat", MEDMMV_JUDGE_MODEL: "deepseek-chat", ...env });
  const c = await twoImageCase(`case-text-only-${++cases}`);
  const { result } = await new Pipeline(cfg).run(c, pipelineOptions(cfg, { k: 3, ...overrides }));
  return result;
}

const withVisionModel = () => ({ MEDMMV_VISION_MODEL: "gpt-4o", MEDMMV_VISION_BASE_URL: vision.baseUrl });

/** The clinical scenario on the text-only server, keeping the text of every rollout prompt it is sent. */
function recordRolloutPrompts(): string[] {
  const texts: string[] = [];
  const scenario = clinicalScenario({ rolloutAnswers: ["B"] });
  const rollout = scenario.agents["rollout"] as ScriptFn;
  scenario.agents["rollout"] = (req) => {
    texts.push(req.text);
    return rollout(req);
  };
  servers.model.setScenario(scenario);
  return texts;
}

describe("a text-only executor with a vision model", () => {
  it("completes; the vision model describes the images once, and every text-only prompt carries the description instead of an image", async () => {
    const result = await runCase(withVisionModel());
    expect(result.status).toBe("completed");

    const deepseek = servers.model.stats();
    // No request to the text-only model carries an image part, so none is refused for one.
    expect(deepseek.log.every((l) => l.images === 0)).toBe(true);
    expect(deepseek.rules.brokenAfterReveal).toEqual([]);
    expect(deepseek.rules.revealed).not.toContain("images");
    expect(deepseek.log.filter((l) => l.agent === "rollout")).toHaveLength(3);
    // The judge takes no images: ImageDoctor's findings are not "checked" against nothing but their own words.
    expect(deepseek.log.some((l) => l.agent === "image-hd")).toBe(false);

    const seen = vision.stats();
    // Once per case: ImageDoctor's findings call is the description.
    expect(seen.byAgent).toEqual({ "image-doctor": 1 });
    expect(seen.log[0]).toMatchObject({ model: "gpt-4o", images: 2 });

    expect(result.provenance.imageInput).toEqual({
      describedBy: "gpt-4o",
      models: [
        { role: "executor", model: "deepseek-chat", saw: "description", note: expect.stringContaining("the vision model gpt-4o described") },
        { role: "vision", model: "gpt-4o", saw: "images", note: expect.any(String) },
        { role: "judge", model: "deepseek-chat", saw: "nothing", note: expect.stringContaining("not checked against the images") },
      ],
    });
    expect(result.provenance.config.modelBehaviour).toMatchObject({ "deepseek-chat": { imagesPerRequest: 0, images: expect.stringContaining("described") } });

    // A described image is not an unread one; the header says the answer's model saw a description.
    const summary = summariseAnswer(result);
    expect(summary.notExamined).toEqual([]);
    expect(summary.imageNote).toBe("the answer's model (deepseek-chat) saw a description of the images made by gpt-4o, not the images");
    expect(formatSummary(result)).toContain("Images: executor deepseek-chat saw gpt-4o's description, not the images; judge deepseek-chat saw no image (it takes none)");
  });

  it("the rollouts' prompts hold the vision model's findings in a MODEL_OUTPUT fence, said to be a description and not the images", async () => {
    const texts = recordRolloutPrompts();
    const result = await runCase(withVisionModel(), { k: 2 });
    expect(result.status).toBe("completed");
    expect(texts).toHaveLength(2);
    for (const t of texts) {
      expect(t).toContain('In their place: the findings the vision model "gpt-4o" described in them. It is a description made by that model, not the images themselves');
      expect(t).toMatch(/<<<MODEL_OUTPUT\nindex 0: \[ecg\] opacity on ecg \| central region; ill-defined, moderate density\nindex 1: \[cxr\] opacity on cxr[^\n]*\nMODEL_OUTPUT>>>/);
    }
  });

  it("with ImageDoctor ablated, the rollouts still share one description, asked by the first of them", async () => {
    const result = await runCase(withVisionModel(), { ablations: { noImageDoctor: true } });
    expect(result.status).toBe("completed");
    expect(vision.stats().byAgent).toEqual({ "image-doctor": 1 });
    expect(servers.model.stats().log.every((l) => l.images === 0)).toBe(true);
    expect(result.provenance.imageInput).toEqual({ describedBy: "gpt-4o", models: [{ role: "executor", model: "deepseek-chat", saw: "description", note: expect.any(String) }] });
    // The description is counted in the case's usage, once.
    expect(result.usage.byAgent["image-doctor"]?.calls).toBe(1);
  });
});

describe("a text-only executor and no vision model", () => {
  it("completes text-only: no image is sent or described, and provenance and the answer's state say the images were not examined", async () => {
    const result = await runCase({});
    expect(result.status).toBe("completed");
    const stats = servers.model.stats();
    expect(stats.log.every((l) => l.images === 0)).toBe(true);
    // ImageDoctor's model takes no images: it does not run (it would describe what it cannot see).
    expect(stats.byAgent["image-doctor"]).toBeUndefined();
    expect(vision.stats().total).toBe(0);
    expect(result.provenance.imageInput).toEqual({
      describedBy: null,
      models: [
        { role: "executor", model: "deepseek-chat", saw: "nothing", note: expect.stringContaining("no model examined the images") },
        { role: "vision", model: "deepseek-chat", saw: "nothing", note: expect.stringContaining("ImageDoctor did not run") },
      ],
    });
    expect(result.provenance.config.modelBehaviour).toMatchObject({ "deepseek-chat": { images: expect.stringContaining("went without them") } });
    const summary = summariseAnswer(result);
    expect(summary.state).toBe("incomplete");
    expect(summary.notExamined).toEqual([{ agent: "image-doctor", what: "the image", why: "no model of this deployment takes images" }]);
    expect(summary.reasons).toContain("the image was not examined (no model of this deployment takes images)");
    expect(summary.imageNote).toBeNull();
    expect(formatSummary(result)).toContain("no model of this deployment takes images: they were not examined");
  });

  it("the rollouts' prompts say the images are not shown and no model examined them", async () => {
    const texts = recordRolloutPrompts();
    await runCase({}, { k: 1 });
    expect(texts).toHaveLength(1);
    expect(texts[0]).toContain("[The case's 2 image(s) are not shown to you: this model takes no images, and no model of this deployment takes images, so no model examined them.");
    expect(texts[0]).not.toContain("MODEL_OUTPUT>>>\n[");
  });
});
