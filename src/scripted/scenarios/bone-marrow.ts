/**
 * Scripted answers for examples/bone-marrow.json (an invented acute myeloid leukaemia with
 * a synthetic aspirate field: a marrow particle at the upper left, large blasts, red cells
 * between them), a case with the Dr-LLaVA bone-marrow pathway. Most rollouts walk the
 * pathway's steps (image quality → cell quality → abnormality → proliferation →
 * diagnosis). One calls the image low quality because of the red cells and still jumps to
 * leukaemia: every claim of it is true, so only the pipeline's own pathway check flags it
 * (context-conflict: a low-quality, blood-diluted field cannot end in AML) and AutoRepair
 * brings it onto the pathway's AML path. ImageDoctor also "sees" Auer rods that a 160-pixel
 * drawing cannot show; the image check rejects that finding. The conversation turns answer
 * the clinician's step-by-step questions on the same path.
 * The literature below was written for this demo: it is not a real publication.
 */
import { demoResult, type CaseScript, type ScriptedClaim } from "./case-script.js";

const smearClaim: ScriptedClaim = { text: "The bone-marrow aspirate smear is well spread and well stained", evidence: ["smear"] };
const fieldClaim: ScriptedClaim = { text: "The photographed field lies near the particles", evidence: ["field", "particle"] };
const blastCountClaim: ScriptedClaim = { text: "Myeloblasts make up 62% of nucleated marrow cells", evidence: ["blasts"] };
const auerClaim: ScriptedClaim = { text: "Several myeloblasts contain Auer rods", evidence: ["auer"] };
const amlClaim: ScriptedClaim = { text: "A marrow blast count of 20% or more with Auer rods establishes acute myeloid leukaemia", evidence: ["k-aml", "blasts"] };
const redCellClaim: ScriptedClaim = { text: "Red cells lie in the background between the nucleated cells", evidence: ["rbc"] };

export const boneMarrowScript: CaseScript = {
  name: "bone-marrow",
  matches: (text) => text.includes("bone-marrow aspirate smear") && text.includes("bm1"),
  facts: [
    { key: "age", category: "demographic", label: "61-year-old man", quote: "61-year-old man" },
    { key: "symptoms", category: "symptom", label: "three weeks of fatigue, exertional breathlessness and easy bruising", quote: "three weeks of fatigue, breathlessness on exertion and easy bruising" },
    { key: "petechiae", category: "sign", label: "pallor and scattered petechiae", quote: "pallor and scattered petechiae" },
    { key: "hb", category: "lab", label: "haemoglobin 78 g/L", quote: "Haemoglobin 78 g/L" },
    { key: "plt", category: "lab", label: "platelets 24 × 10^9/L", quote: "platelets 24 × 10^9/L" },
    { key: "wcc", category: "lab", label: "white cell count 31 × 10^9/L with circulating blasts", quote: "white cell count 31 × 10^9/L with circulating blasts" },
    { key: "smear", category: "imaging", label: "aspirate smear well spread and well stained", quote: "The bone-marrow aspirate smear is well spread and well stained" },
    { key: "field", category: "imaging", label: "photographed field near the particles", quote: "the photographed field lies near the particles" },
    { key: "blasts", category: "lab", label: "myeloblasts 62% of nucleated marrow cells", quote: "Myeloblasts make up 62% of nucleated marrow cells" },
    { key: "auer", category: "lab", label: "Auer rods in several myeloblasts", quote: "several contain Auer rods" },
  ],
  image: {
    findings: [
      {
        key: "particle",
        imageId: "bm1",
        label: "marrow particle at the upper left",
        location: "upper left of the field",
        characteristics: "dense purple cluster of nucleated cells",
      },
      {
        key: "large-cells",
        imageId: "bm1",
        label: "many large cells with round nuclei and fine chromatin",
        location: "throughout the field",
        size: "about twice the diameter of the red cells",
        characteristics: "a thin rim of blue cytoplasm and one pale nucleolus each",
      },
      {
        key: "rbc",
        imageId: "bm1",
        label: "red cells between the nucleated cells",
        location: "background of the whole field",
        characteristics: "small pink discs with central pallor",
      },
      {
        imageId: "bm1",
        label: "Auer rods in the blast cytoplasm",
        location: "cytoplasm of several large cells",
        characteristics: "slender needle-shaped red inclusions",
        rejected: { verdict: "unsupported", issue: "no rod-shaped inclusion is visible in any cell at this resolution; the Auer rods are reported in the notes, not seen in the image" },
      },
    ],
    instructions: ["Remove the Auer rods: the image does not show them; they are known from the notes only."],
  },
  searches: [
    {
      a: "blasts",
      b: "auer",
      query: "myeloblasts 20 percent Auer rods acute myeloid leukaemia",
      matches: /myeloblast|auer/i,
      corpus: ["corpus://haematology/blast-threshold", "corpus://haematology/auer-rods"],
      relation: "explains",
      results: [
        demoResult("blast-threshold", "Blast threshold in acute myeloid leukaemia (demo notes)", "A marrow blast count of 20 percent or more of nucleated cells, with Auer rods or other myeloid features, establishes acute myeloid leukaemia.", 0.91),
      ],
      knowledge: [{ key: "k-aml", label: "a marrow blast count of 20% or more with Auer rods establishes acute myeloid leukaemia", relatesTo: "both", relation: "explains" }],
    },
    {
      a: "smear",
      b: "field",
      query: "aspirate smear well stained near the particles adequate differential count",
      matches: /particles|smear/i,
      corpus: ["corpus://haematology/aspirate-adequacy", "corpus://haematology/blood-contamination"],
      relation: "supports",
      results: [
        demoResult("aspirate-adequacy", "Adequacy of the marrow aspirate smear (demo notes)", "A thinly spread, well-stained smear read in the cellular trails near the particles is adequate for a differential count; fields far from the particles are diluted by blood.", 0.87),
      ],
      knowledge: [{ key: "k-adequate", label: "a well-stained smear read near the particles is adequate for a differential count", relatesTo: "both", relation: "supports" }],
    },
    {
      a: "plt",
      b: "wcc",
      query: "anaemia thrombocytopenia circulating blasts marrow failure leukaemia",
      matches: /thrombocytopenia|marrow failure/i,
      corpus: ["corpus://haematology/marrow-failure"],
      relation: "associated-with",
      results: [
        demoResult("marrow-failure", "Marrow failure in acute leukaemia (demo review)", "When leukaemic blasts replace the marrow, anaemia, thrombocytopenia with bruising and petechiae, and circulating blasts follow.", 0.83),
      ],
      knowledge: [{ key: "k-failure", label: "anaemia and thrombocytopenia with circulating blasts reflect a marrow replaced by leukaemic blasts", relatesTo: "both", relation: "associated-with" }],
    },
  ],
  paths: {
    // Labelled by the pathway as high → adequate → abnormal → blasts → aml (test/scripted/scenarios/bone-marrow.test.ts).
    walk: {
      answer: "A",
      summary: "Acute myeloid leukaemia: an adequate smear read near the particles, 62% myeloblasts with Auer rods.",
      coherence: 0.95,
      rationale: "Each step of the marrow review follows from the one before, from slide quality to the blast count.",
      steps: [
        { text: "The aspirate smear is well spread and well stained, so the image is sufficient for analysis.", stage: "visual", claims: [smearClaim] },
        {
          text: "The photographed field lies near the particles, so the region is adequate for counting cells.",
          stage: "knowledge",
          claims: [fieldClaim, { text: "A well-stained smear read near the particles is adequate for a differential count", evidence: ["k-adequate"] }],
        },
        {
          text: "Large immature cells fill the field, which points to a malignancy of the marrow.",
          stage: "visual",
          claims: [{ text: "Many large cells with round nuclei and fine chromatin fill the field", evidence: ["large-cells"] }],
        },
        { text: "The proliferating cells are myeloblasts, 62% of nucleated cells, several with Auer rods.", stage: "knowledge", claims: [blastCountClaim, auerClaim] },
        { text: "A blast count above 20% with Auer rods establishes acute myeloid leukaemia.", stage: "reasoning", claims: [amlClaim] },
      ],
    },
    counts: {
      answer: "A",
      summary: "Acute myeloid leukaemia: marrow failure in the blood count, confirmed by 62% myeloblasts in the marrow.",
      coherence: 0.88,
      rationale: "The blood count and the blast count agree; the slide's adequacy is taken for granted rather than checked.",
      steps: [
        {
          text: "Anaemia, thrombocytopenia and circulating blasts suggest the marrow has been replaced by leukaemic cells.",
          stage: "reasoning",
          claims: [
            { text: "Haemoglobin is 78 g/L", evidence: ["hb"] },
            { text: "Platelets are 24 × 10^9/L", evidence: ["plt"] },
            { text: "Anaemia and thrombocytopenia with circulating blasts reflect a marrow replaced by leukaemic blasts", evidence: ["k-failure", "wcc"] },
          ],
        },
        { text: "The marrow count confirms it: myeloblasts make up 62% of nucleated cells.", stage: "knowledge", claims: [blastCountClaim] },
      ],
    },
    // Labelled low → blood → inadequate → inadequate → aml: the blood-diluted pathway cannot end in AML.
    jump: {
      answer: "A",
      summary: "Acute myeloid leukaemia, called from the blood count on an image judged too low in quality to read.",
      coherence: 0.62,
      rationale: "The conclusion does not follow from the first step: an unreadable slide cannot show a leukaemia.",
      repairedTo: "jumpRepaired",
      steps: [
        { text: "Red cells crowd the field, so the image quality is low.", stage: "visual", claims: [redCellClaim] },
        {
          text: "Circulating blasts in the blood count are enough to call it acute myeloid leukaemia.",
          stage: "reasoning",
          claims: [{ text: "The white cell count is 31 × 10^9/L with circulating blasts", evidence: ["wcc"] }],
        },
      ],
    },
    jumpRepaired: {
      answer: "A",
      summary: "Revised onto the pathway: the slide is readable after all, the field lies near the particles, and 62% myeloblasts with Auer rods make it acute myeloid leukaemia.",
      coherence: 0.9,
      rationale: "The corrected image-quality step now leads through the cell count to the diagnosis.",
      steps: [
        { text: "Red cells lie between the cells, but the smear is well spread and well stained: the image is sufficient for analysis.", stage: "visual", claims: [redCellClaim, smearClaim] },
        { text: "The photographed field lies near the particles, so the region is adequate for counting cells.", stage: "visual", claims: [fieldClaim] },
        { text: "Myeloblasts make up 62% of nucleated cells, a malignancy of the myeloid line.", stage: "knowledge", claims: [blastCountClaim] },
        { text: "With Auer rods, that blast count establishes acute myeloid leukaemia.", stage: "reasoning", claims: [amlClaim] },
      ],
    },
  },
  rollouts: ["walk", "counts", "jump", "walk", "walk"],
  turns: [
    {
      asks: /quality/i,
      step: "image-quality",
      answer: "Yes: the aspirate smear is well spread and well stained, so the image is sufficient for analysis.",
      claims: [smearClaim],
    },
    {
      asks: /region|field/i,
      step: "cell-quality",
      answer: "The photographed field lies near the particles, so it is adequate for counting cells.",
      claims: [fieldClaim],
    },
    {
      asks: /diagnosis/i,
      step: "diagnosis",
      answer: "Acute myeloid leukaemia (AML): myeloblasts make up 62% of nucleated marrow cells, several with Auer rods.",
      claims: [blastCountClaim, auerClaim],
    },
  ],
};
