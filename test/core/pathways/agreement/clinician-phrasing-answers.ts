import type { LabelledAnswerCase } from "./template-style-answers.js";

/**
 * Synthetic: 60 answers written for this test the way clinicians and vision-language models
 * phrase Dr-LLaVA's five questions — negations and double negations, synonyms, abbreviations
 * in any case, plurals and inflections, and answers naming two categories of one step
 * (expected "no-match": ambiguous). Each carries the clinically right label. The labeller
 * is held to at least 55 of 60.
 */
export const CLINICIAN_PHRASING_ANSWERS: LabelledAnswerCase[] = [
  // image-quality
  { step: "image-quality", expected: "high", text: "Yes, the smear is of high quality and adequate for review." },
  { step: "image-quality", expected: "high", text: "Image quality is acceptable; suitable for morphologic assessment." },
  { step: "image-quality", expected: "low", text: "No." },
  { step: "image-quality", expected: "low", text: "The slide is blurry and poorly stained; not suitable for analysis." },
  { step: "image-quality", expected: "low", text: "Insufficient quality for any diagnostic conclusion." },
  { step: "image-quality", expected: "high", text: "The image is not inadequate: it is usable for diagnosis." },
  { step: "image-quality", expected: "low", text: "Non-diagnostic image, out of focus." },
  { step: "image-quality", expected: "low", text: "It can't be used, the patch is too poor." },
  { step: "image-quality", expected: "no-match", text: "Parts of the field are usable but other parts are out of focus and unsuitable." },
  { step: "image-quality", expected: "high", text: "Optimal staining and focus; effective for diagnosis." },
  { step: "image-quality", expected: "low", text: "INADEQUATE FOR DIAGNOSIS." },
  { step: "image-quality", expected: "high", text: "Sufficient." },
  // cell-quality
  { step: "cell-quality", expected: "blood", text: "Mostly RBCs; hemodiluted sample." },
  { step: "cell-quality", expected: "blood", text: "The region is flooded with red blood cells." },
  { step: "cell-quality", expected: "clot", text: "Clotted region with clumps of particles." },
  { step: "cell-quality", expected: "adequate", text: "Cellular area adjacent to the particles, well suited for a differential count." },
  { step: "cell-quality", expected: "no-match", text: "Near particles, but flooded with blood." },
  { step: "cell-quality", expected: "adequate", text: "Adequate region: close to particles, without blood contamination or clots." },
  { step: "cell-quality", expected: "clot", text: "Dense particle aggregates dominate the field." },
  { step: "cell-quality", expected: "blood", text: "bloody smear, peripheral blood contamination" },
  { step: "cell-quality", expected: "adequate", text: "The area is optimal for cell analysis." },
  { step: "cell-quality", expected: "no-match", text: "Either a clot or a blood-contaminated region; hard to say." },
  { step: "cell-quality", expected: "adequate", text: "This region is suitable; it is not bloody." },
  { step: "cell-quality", expected: "clot", text: "The aspirate is clotted." },
  // abnormality
  { step: "abnormality", expected: "normal", text: "No abnormalities seen." },
  { step: "abnormality", expected: "normal", text: "Unremarkable marrow, within normal limits." },
  { step: "abnormality", expected: "abnormal", text: "Yes, there are abnormal cells consistent with a malignancy." },
  { step: "abnormality", expected: "abnormal", text: "Malignancy cannot be excluded; atypical cells are present." },
  { step: "abnormality", expected: "abnormal", text: "Findings suggest a neoplastic process." },
  { step: "abnormality", expected: "normal", text: "The cells are not abnormal and appear healthy." },
  { step: "abnormality", expected: "inadequate", text: "Cannot be assessed: the sample is insufficient." },
  { step: "abnormality", expected: "abnormal", text: "A malignant disorder is not ruled out by this image; abnormal forms are seen." },
  { step: "abnormality", expected: "normal", text: "There is no evidence of malignancy or dysplasia." },
  { step: "abnormality", expected: "inadequate", text: "Poor quality, so abnormality cannot be judged." },
  { step: "abnormality", expected: "no-match", text: "Some cells look normal, others look malignant; I am not sure." },
  { step: "abnormality", expected: "abnormal", text: "Abnormalities are present." },
  // proliferation
  { step: "proliferation", expected: "blasts", text: "Increased myeloblasts (>20%)." },
  { step: "proliferation", expected: "plasma-cells", text: "Sheets of plasma cells." },
  { step: "proliferation", expected: "plasma-cells", text: "Plasmacytosis with atypical plasma cells." },
  { step: "proliferation", expected: "none", text: "No abnormal proliferation of any lineage." },
  { step: "proliferation", expected: "none", text: "Neither blasts nor plasma cells are increased." },
  { step: "proliferation", expected: "blasts", text: "BLASTS predominate." },
  { step: "proliferation", expected: "no-match", text: "Both blasts and plasma cells are increased." },
  { step: "proliferation", expected: "inadequate", text: "Too few cells to assess proliferation." },
  { step: "proliferation", expected: "blasts", text: "Proliferating myeloblasts rather than plasma cells." },
  { step: "proliferation", expected: "none", text: "Normal maturation; no proliferation." },
  { step: "proliferation", expected: "inadequate", text: "Subpar sample, not enough cells." },
  { step: "proliferation", expected: "plasma-cells", text: "A plasma cell proliferation is evident; blasts are not increased." },
  // diagnosis
  { step: "diagnosis", expected: "aml", text: "aml" },
  { step: "diagnosis", expected: "aml", text: "AML cannot be excluded." },
  { step: "diagnosis", expected: "mm", text: "Findings are consistent with MM." },
  { step: "diagnosis", expected: "mm", text: "Plasma cell myeloma is likely; AML is unlikely." },
  { step: "diagnosis", expected: "no-match", text: "Either AML or multiple myeloma; cannot tell." },
  { step: "diagnosis", expected: "healthy", text: "Healthy, no malignancy." },
  { step: "diagnosis", expected: "inconclusive", text: "Inconclusive because the specimen is inadequate." },
  { step: "diagnosis", expected: "inconclusive", text: "A diagnosis is not possible on this material." },
  { step: "diagnosis", expected: "mm", text: "Multiple myeloma is not ruled out, and plasma cells are increased." },
  { step: "diagnosis", expected: "aml", text: "Acute myeloid leukaemia." },
  { step: "diagnosis", expected: "healthy", text: "No evidence of leukemia or myeloma; normal bone marrow." },
  { step: "diagnosis", expected: "inconclusive", text: "Unable to determine the diagnosis." },
];
