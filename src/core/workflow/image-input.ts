import type { ImageInputNote } from "../contracts/diagnosis-result.js";
import type { LlmClient } from "../llm/model-client.js";
import { describingModel, takesImages } from "../agents/image-description.js";
import type { PipelineOptions } from "./state.js";

/**
 * provenance.imageInput: how the case's images reached each model whose calls carry them, when
 * some model takes none (image-description.ts). Read from the models' profiles, as the calls
 * themselves decided it (agent-context.ts callAgent); undefined when every model was sent the
 * images, or the case has none.
 */
export function imageInputNote(llm: LlmClient, imageCount: number, rolloutModels: readonly string[], opts: PipelineOptions): ImageInputNote | undefined {
  if (imageCount === 0) return undefined;
  const by = describingModel(llm);
  const models: ImageInputNote["models"] = [];
  // The rollouts' models (several with MEDMMV_ROLLOUT_MODELS) and the executor's own, whose repairs see the images too.
  for (const model of new Set([...rolloutModels, llm.modelFor("executor")])) {
    if (takesImages(llm, "executor", model)) models.push({ role: "executor", model, saw: "images", note: "its calls carried the images" });
    else if (by !== null)
      models.push({ role: "executor", model, saw: "description", note: `the model takes no images: its calls carried, in their place, the findings the vision model ${by} described in them (a model's description, not the images)` });
    else models.push({ role: "executor", model, saw: "nothing", note: "the model takes no images, and no model of this deployment does: its calls went without them, and no model examined the images" });
  }
  if (!opts.ablations.noImageDoctor) {
    const vision = llm.modelFor("vision");
    models.push(
      by !== null
        ? { role: "vision", model: vision, saw: "images", note: "ImageDoctor read the images; its findings are what described them to the models that take none" }
        : { role: "vision", model: vision, saw: "nothing", note: "the model takes no images: ImageDoctor did not run, and no image finding is in the evidence" },
    );
    // ImageDoctor's findings are checked against the images by the judge (when ImageDoctor ran and checks are on).
    if (by !== null && !opts.ablations.noHd) {
      const judge = llm.modelFor("judge");
      models.push(
        takesImages(llm, "judge")
          ? { role: "judge", model: judge, saw: "images", note: "it checked ImageDoctor's findings against the images" }
          : { role: "judge", model: judge, saw: "nothing", note: "the model takes no images: ImageDoctor's findings were not checked against the images" },
      );
    }
  }
  return models.every((m) => m.saw === "images") ? undefined : { describedBy: by, models };
}

/**
 * provenance.config.modelBehaviour's word on each text-only model's images, from what the
 * case did with them (the client's own note knows only the model's limit).
 */
export function withImageNotes(behaviour: Record<string, Record<string, unknown>>, note: ImageInputNote | undefined): Record<string, Record<string, unknown>> {
  if (!note) return behaviour;
  const words = new Map<string, string[]>();
  for (const m of note.models) if (m.saw !== "images") words.set(m.model, [...(words.get(m.model) ?? []), `${m.role}: ${m.note}`]);
  const out = { ...behaviour };
  for (const [model, said] of words) out[model] = { ...out[model], images: said.join("; ") };
  return out;
}
