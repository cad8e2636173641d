/**
 * Scripted answers for examples/community-pneumonia.json (an invented right lower lobe
 * pneumonia with a synthetic radiograph: a patchy bright area low in the patient's right
 * lung, the image's left). ImageDoctor also reports a left pleural effusion the drawing
 * does not show; the image check rejects it. One rollout calls it pulmonary infarction on
 * a "wedge-shaped pleural-based opacity" that no image finding supports; the detector
 * rejects the claim (a visual-stage hallucination) and AutoRepair returns to the image.
 * The literature below was written for this demo: it is not a real publication.
 */
import { demoResult, type CaseScript, type ScriptedClaim, type ScriptedStep } from "./case-script.js";

// Claims several paths make, declared once so that every path judges them alike.
const coughClaim: ScriptedClaim = { text: "She has a productive cough with rusty sputum", evidence: ["cough"] };
const signsClaim: ScriptedClaim = { text: "Bronchial breathing and crackles are heard at the right lung base", evidence: ["signs"] };
const consolidationClaim: ScriptedClaim = { text: "There is consolidation in the right lower zone", evidence: ["consolidation"] };

/** The first step of the infarction path, which its repair keeps. */
const infarctionOpening: ScriptedStep = {
  text: "Pleuritic pain with tachypnoea and hypoxaemia raises pulmonary embolism.",
  stage: "reasoning",
  claims: [
    { text: "She has right-sided pleuritic chest pain", evidence: ["pleurisy"] },
    { text: "Oxygen saturation is 91% on room air", evidence: ["spo2"] },
  ],
};

export const communityPneumoniaScript: CaseScript = {
  name: "community-pneumonia",
  matches: (text) => text.includes("rusty sputum") && text.includes("cxr1"),
  facts: [
    { key: "age", category: "demographic", label: "67-year-old woman", quote: "67-year-old woman" },
    { key: "fever", category: "symptom", label: "fever for three days", quote: "has had fever" },
    { key: "cough", category: "symptom", label: "productive cough with rusty sputum", quote: "productive cough with rusty sputum" },
    { key: "pleurisy", category: "symptom", label: "right-sided pleuritic chest pain", quote: "right-sided pleuritic chest pain for three days" },
    { key: "temp", category: "vital", label: "temperature 38.9 °C", quote: "Temperature 38.9 °C" },
    { key: "rr", category: "vital", label: "respiratory rate 26/min", quote: "respiratory rate 26/min" },
    { key: "spo2", category: "vital", label: "oxygen saturation 91% on room air", quote: "oxygen saturation 91% on room air" },
    { key: "signs", category: "sign", label: "bronchial breathing and crackles at the right lung base", quote: "Bronchial breathing and crackles are heard at the right lung base" },
    { key: "wcc", category: "lab", label: "white cell count 16.2 × 10^9/L with neutrophilia", quote: "White cell count 16.2 × 10^9/L with neutrophilia" },
    { key: "crp", category: "lab", label: "C-reactive protein 212 mg/L", quote: "C-reactive protein 212 mg/L" },
  ],
  image: {
    findings: [
      {
        key: "consolidation",
        imageId: "cxr1",
        label: "consolidation in the right lower zone",
        location: "right lower zone (left side of the image)",
        size: "about a third of the right lung field",
        characteristics: "patchy, ill-defined increased density, rounded upper border",
      },
      {
        imageId: "cxr1",
        label: "left pleural effusion",
        location: "left costophrenic angle",
        characteristics: "homogeneous density with a meniscus",
        rejected: { verdict: "unsupported", issue: "the left costophrenic angle is clear: there is no meniscus or homogeneous basal density" },
      },
      {
        key: "left-clear",
        imageId: "cxr1",
        label: "clear left lung field",
        location: "left lung (right side of the image)",
        characteristics: "normal lucency between the ribs",
      },
    ],
    instructions: ["Remove the left pleural effusion: the left costophrenic angle is clear on the image."],
  },
  searches: [
    {
      a: "signs",
      b: "consolidation",
      query: "bronchial breathing crackles lobar consolidation radiograph",
      matches: /consolidation/i,
      corpus: ["corpus://respiratory/consolidation-signs", "corpus://respiratory/lobar-pneumonia-radiograph"],
      relation: "explains",
      results: [
        demoResult("consolidation-signs", "Bedside signs of consolidation (demo notes)", "Bronchial breathing and focal crackles over one zone are the bedside signs of lobar consolidation, and usually match a patchy opacity of that lobe on the chest radiograph.", 0.9),
      ],
      knowledge: [{ key: "k-signs", label: "bronchial breathing and focal crackles are the bedside signs of lobar consolidation", relatesTo: "both", relation: "explains" }],
    },
    {
      a: "wcc",
      b: "crp",
      query: "neutrophilia raised C-reactive protein bacterial pneumonia",
      matches: /neutrophilia|reactive/i,
      corpus: ["corpus://respiratory/inflammatory-markers", "corpus://respiratory/bacterial-vs-viral"],
      relation: "associated-with",
      results: [
        demoResult("inflammatory-markers", "Inflammatory markers in lower respiratory infection (demo review)", "A neutrophil leucocytosis together with a markedly raised C-reactive protein favours a bacterial cause of lower respiratory tract infection over a viral one.", 0.86),
      ],
      knowledge: [{ key: "k-bacterial", label: "neutrophil leucocytosis with a markedly raised CRP favours bacterial infection", relatesTo: "both", relation: "suggests" }],
    },
    {
      a: "pleurisy",
      b: "cough",
      query: "pleuritic chest pain purulent sputum pneumonia versus pulmonary infarction",
      matches: /infarction|pleuritic/i,
      corpus: ["corpus://respiratory/pleuritic-pain", "corpus://respiratory/pulmonary-infarction"],
      relation: "associated-with",
      results: [
        demoResult("pleuritic-pain", "Pleuritic chest pain: differential diagnosis (demo notes)", "Pleuritic pain occurs in pneumonia and in pulmonary infarction. Fever, purulent or rusty sputum and focal consolidation favour pneumonia; pulmonary infarction tends to give a wedge-shaped pleural-based opacity.", 0.84),
      ],
      knowledge: [
        { key: "k-pleurisy", label: "pleuritic pain with fever, rusty sputum and focal consolidation favours pneumonia over pulmonary infarction", relatesTo: "both", relation: "suggests" },
        { key: "k-infarct", label: "pulmonary infarction tends to give a wedge-shaped pleural-based opacity", relatesTo: "a", relation: "associated-with" },
      ],
    },
  ],
  paths: {
    lobar: {
      answer: "A",
      summary: "Right lower lobe pneumonia: consolidation in the right lower zone with matching bronchial breathing and crackles, fever, rusty sputum and neutrophilia.",
      coherence: 0.94,
      rationale: "The image, the bedside signs and the laboratory results agree and each step follows.",
      steps: [
        {
          text: "The radiograph shows consolidation in the right lower zone.",
          stage: "visual",
          claims: [consolidationClaim],
        },
        {
          text: "Bronchial breathing and crackles at the right base are the bedside signs of that consolidation.",
          stage: "knowledge",
          claims: [
            signsClaim,
            { text: "Bronchial breathing and focal crackles are the bedside signs of lobar consolidation", evidence: ["k-signs"] },
          ],
        },
        {
          text: "Fever, rusty sputum and neutrophilia with a CRP of 212 mg/L point to a bacterial pneumonia.",
          stage: "reasoning",
          claims: [
            coughClaim,
            { text: "Neutrophilia with a markedly raised CRP favours bacterial infection", evidence: ["k-bacterial", "wcc", "crp"] },
          ],
        },
      ],
    },
    clinical: {
      answer: "A",
      summary: "Community-acquired pneumonia on clinical and laboratory grounds, localised to the right base.",
      coherence: 0.86,
      rationale: "The clinical picture supports the answer; the image is not used to localise the lobe.",
      steps: [
        {
          text: "Three days of fever, productive cough and pleuritic pain suggest a lower respiratory infection.",
          stage: "reasoning",
          claims: [
            { text: "She has had fever for three days", evidence: ["fever", "temp"] },
            coughClaim,
          ],
        },
        {
          text: "Crackles at the right base and a raised white count localise and confirm it.",
          stage: "reasoning",
          claims: [
            signsClaim,
            { text: "The white cell count is 16.2 × 10^9/L with neutrophilia", evidence: ["wcc"] },
          ],
        },
      ],
    },
    infarction: {
      answer: "D",
      summary: "Pulmonary embolism with infarction: pleuritic pain, hypoxaemia and a wedge-shaped opacity.",
      coherence: 0.68,
      rationale: "The steps are linked, but the conclusion hangs on an image feature that is not described anywhere else.",
      repairedTo: "infarctionRepaired",
      steps: [
        infarctionOpening,
        {
          text: "The radiograph shows a wedge-shaped pleural-based opacity, typical of a pulmonary infarct.",
          stage: "visual",
          claims: [
            {
              text: "The opacity on the radiograph is wedge-shaped and pleural-based",
              evidence: ["consolidation"],
              flaw: {
                verdict: "contradicted",
                severity: "MEDIUM",
                issue: "The image finding is a patchy, ill-defined consolidation with a rounded upper border in the right lower zone; no wedge-shaped pleural-based opacity was found.",
                instruction: "Describe the opacity as the image findings do, and weigh fever, rusty sputum and neutrophilia before choosing infarction.",
              },
            },
          ],
        },
      ],
    },
    infarctionRepaired: {
      answer: "A",
      summary: "Revised from pulmonary infarction: the opacity is a patchy right lower zone consolidation and fever, rusty sputum and neutrophilia favour pneumonia.",
      coherence: 0.87,
      rationale: "The corrected image reading and the clinical findings lead to the answer.",
      steps: [
        infarctionOpening,
        {
          text: "The radiograph shows patchy consolidation in the right lower zone, not a wedge-shaped infarct.",
          stage: "visual",
          claims: [consolidationClaim],
        },
        {
          text: "With fever, rusty sputum and focal consolidation, pneumonia is more likely than infarction.",
          stage: "reasoning",
          claims: [{ text: "Pleuritic pain with fever, rusty sputum and focal consolidation favours pneumonia over pulmonary infarction", evidence: ["k-pleurisy", "fever"] }],
        },
      ],
    },
  },
  rollouts: ["lobar", "clinical", "infarction", "lobar", "lobar"],
};
