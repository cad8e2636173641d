import { describe, expect, it } from "vitest";
import { resultCard } from "../../../src/server/cds-hooks/cards.js";
import { summariseAnswer } from "../../../src/server/view/answer-state.js";
import { notReadOfResult, withNotRead } from "../../../src/server/cds-hooks/prefetch-bundle.js";
import { OTHER_PATIENT_REASON } from "../../../src/core/intake/fhir/one-patient.js";
import { confidentCase, incompleteCase, uncertainCase } from "./how-sure-cases.js";

describe("how sure: one rule for the header and the CDS card", () => {
  it("confident, uncertain and incomplete, each with its reasons; the card's indicator follows the state", () => {
    const cases = { confident: confidentCase().result, uncertain: uncertainCase().result, incomplete: incompleteCase().result };
    for (const [state, result] of Object.entries(cases)) {
      expect(summariseAnswer(result).state).toBe(state);
      expect(resultCard(result, "https://medmmv.example.org/v").indicator).toBe(state === "confident" ? "info" : "warning");
    }
    expect(summariseAnswer(cases.confident)).toMatchObject({ reasons: [], answer: "(A) Synthetic answer", runs: { chose: 4, of: 5 }, claims: { supported: 2, unsupported: 0, rejected: 0 }, notExamined: [] });
    expect(summariseAnswer(cases.uncertain).reasons).toEqual([
      "only 1 of 5 runs chose this answer",
      "under half of the final paths' score is behind it (0.26)",
      "1 claim of the selected path is not supported by the evidence",
    ]);
    expect(summariseAnswer(cases.incomplete)).toMatchObject({ reasons: ["the image was not examined (content filter)"], notExamined: [{ agent: "image-doctor", what: "the image", why: "content filter" }] });
  });

  it("images a text-only model saw as the vision model's description are read (the header says so); images no model could read are not examined", () => {
    const described = confidentCase().result;
    described.provenance.imageInput = {
      describedBy: "gpt-4o",
      models: [
        { role: "executor", model: "deepseek-chat", saw: "description", note: "…" },
        { role: "vision", model: "gpt-4o", saw: "images", note: "…" },
        { role: "judge", model: "deepseek-chat", saw: "nothing", note: "…" },
      ],
    };
    expect(summariseAnswer(described)).toMatchObject({ state: "confident", notExamined: [], imageNote: "the answer's model (deepseek-chat) saw a description of the images made by gpt-4o, not the images" });
    expect(resultCard(described, "https://medmmv.example.org/v").detail).toContain("**Images:** the answer's model (deepseek-chat) saw a description of the images made by gpt-4o");

    const unseen = confidentCase().result;
    unseen.provenance.imageInput = { describedBy: null, models: [{ role: "executor", model: "deepseek-chat", saw: "nothing", note: "…" }, { role: "vision", model: "deepseek-chat", saw: "nothing", note: "…" }] };
    expect(summariseAnswer(unseen)).toMatchObject({ state: "incomplete", reasons: ["the image was not examined (no model of this deployment takes images)"], imageNote: null });
    expect(resultCard(unseen, "https://medmmv.example.org/v").indicator).toBe("warning");

    // A vision model that takes no images beside an executor that does: ImageDoctor did not read them.
    const noDoctor = confidentCase().result;
    noDoctor.provenance.imageInput = { describedBy: null, models: [{ role: "executor", model: "gpt-4o", saw: "images", note: "…" }, { role: "vision", model: "deepseek-chat", saw: "nothing", note: "…" }] };
    expect(summariseAnswer(noDoctor).notExamined).toEqual([{ agent: "image-doctor", what: "the image", why: "ImageDoctor's model takes no images" }]);
  });

  it("what the EHR's record left unread makes a confident result incomplete on the card", () => {
    const r = confidentCase().result;
    expect(summariseAnswer(r, [{ key: "conditions", reason: "401" }])).toMatchObject({ state: "incomplete", reasons: ["part of the record was not read (conditions)"] });
  });

  it("a stored result carries what its card said was not read: the view's header and the card's feedback judge it as the card did", () => {
    const r = confidentCase().result;
    // As the hook stores it: the unread prefetch keys at the head of the case's ignored resources, another patient's resources beside.
    const stored = { metadata: { fhir: { ignoredResources: [{ resource: "Condition/c-9", reason: OTHER_PATIENT_REASON }] } } };
    withNotRead(stored, [{ key: "conditions", reason: "the FHIR server answered 401" }]);
    r.provenance.ignoredResources = stored.metadata.fhir.ignoredResources;
    expect(notReadOfResult(r.provenance.ignoredResources)).toEqual([
      { key: "conditions", reason: "the FHIR server answered 401" },
      { key: "conditions", reason: "of another patient", said: "1 condition of another patient" },
    ]);
    expect(summariseAnswer(r)).toMatchObject({ state: "incomplete", reasons: ["part of the record was not read (conditions, conditions)"] });
    expect(resultCard(r, "https://medmmv.example.org/v").indicator).toBe("warning");
    // A FHIR case's own ignored resources (a resource type medmmv does not read) are not an unread part of the EHR's record.
    r.provenance.ignoredResources = [{ resource: "Coverage/1", reason: "not a clinical resource medmmv reads" }];
    expect(summariseAnswer(r).state).toBe("confident");
  });

  it("a failed search pair is one source fewer (not incomplete); a refused one is said", () => {
    const r = confidentCase().result;
    r.provenance.failures = [{ branch: "web-search chest pain|stemi", code: "SEARCH_FAILED", message: "timeout" }, { branch: "rollout-2", code: "LLM_FATAL", message: "x" }];
    expect(summariseAnswer(r).state).toBe("confident");
    r.provenance.failures.push({ branch: "web-search a|b", code: "MODEL_REFUSED", message: "no" });
    expect(summariseAnswer(r)).toMatchObject({ state: "incomplete", notExamined: [{ agent: "web-search", what: "the literature", why: "model refused" }] });
  });

  it("runs come from the differential when the result has one (issue 52), else from the rollouts with the answer's key", () => {
    const r = uncertainCase().result;
    expect(summariseAnswer({ ...r, differential: [{ rollouts: 4, of: 5 }] } as typeof r).runs).toEqual({ chose: 4, of: 5 });
    r.answer = { option: null, text: "Acute Pericarditis!" };
    r.stability.rolloutAnswers = ["acute pericarditis", "stemi", "acute pericarditis"];
    expect(summariseAnswer(r).runs).toEqual({ chose: 2, of: 3 });
  });

  it("the result card carries its case's uuid and the override reasons", () => {
    const r = confidentCase().result;
    r.caseId = "case-0b6f2f5e-8d0a-4a8e-9a43-2f7d7c1d9e10";
    const card = resultCard(r, "https://medmmv.example.org/v");
    expect(card.uuid).toBe("0b6f2f5e-8d0a-4a8e-9a43-2f7d7c1d9e10");
    expect(card.overrideReasons?.map((c) => c.code)).toEqual(["disagree-diagnosis", "evidence-insufficient", "already-addressed", "not-relevant"]);
  });
});
