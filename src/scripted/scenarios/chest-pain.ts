/**
 * Scripted answers for examples/chest-pain.json (an invented inferior STEMI). One rollout
 * reads the ECG as pericarditis; the detector rejects its "diffuse ST elevation" claim
 * against the quoted ECG findings and the literature, and AutoRepair brings it to the
 * territorial reading. ImageDoctor first "sees" ST elevation on the placeholder strip,
 * which shows no waveform at all; the image check rejects that finding.
 * The literature below was written for this demo: it is not a real publication.
 */
import { demoResult, type CaseScript, type ScriptedClaim, type ScriptedStep } from "./case-script.js";

// Claims several paths make, declared once so that every path judges them alike.
const painClaim: ScriptedClaim = { text: "Crushing substernal chest pain radiates to the left arm", evidence: ["pain"] };
const steClaim: ScriptedClaim = { text: "ST elevation is present in leads II, III and aVF", evidence: ["ste"] };
const tropClaim: ScriptedClaim = { text: "Troponin I is raised at 2.4 ng/mL", evidence: ["trop"] };

/** The first step of the pericarditis path, which its repair keeps. */
const pericarditisOpening: ScriptedStep = {
  text: "The patient has acute chest pain and ST elevation on the ECG.",
  stage: "reasoning",
  claims: [
    painClaim,
    steClaim,
  ],
};

export const chestPainScript: CaseScript = {
  name: "chest-pain",
  matches: (text) => text.includes("crushing substernal chest pain") && text.includes("aVF"),
  facts: [
    { key: "age", category: "demographic", label: "58-year-old man", quote: "58-year-old man" },
    { key: "pain", category: "symptom", label: "crushing substernal chest pain radiating to the left arm", detail: "40 minutes", quote: "crushing substernal chest pain radiating to the left arm for 40 minutes" },
    { key: "sweat", category: "sign", label: "diaphoresis and nausea", quote: "He is diaphoretic and nauseated" },
    { key: "htn", category: "history", label: "hypertension", quote: "History of hypertension" },
    { key: "smoke", category: "history", label: "smoker, 30 pack-years", quote: "smoking 30 pack-years" },
    { key: "bp", category: "vital", label: "blood pressure 150/95 mmHg", quote: "Blood pressure 150/95 mmHg" },
    { key: "hr", category: "vital", label: "heart rate 104/min", detail: "sinus tachycardia range", quote: "heart rate 104/min" },
    { key: "ste", category: "other", label: "ST elevation in leads II, III and aVF", detail: "ECG", quote: "ST elevation in leads II, III and aVF" },
    { key: "recip", category: "other", label: "reciprocal ST depression in aVL", detail: "ECG", quote: "reciprocal ST depression in aVL" },
    { key: "trop", category: "lab", label: "troponin I 2.4 ng/mL", detail: "raised", quote: "Troponin I is 2.4 ng/mL" },
  ],
  image: {
    findings: [
      {
        imageId: "img1",
        label: "ST-segment elevation on the rhythm strip",
        location: "centre of the strip",
        characteristics: "raised ST segments after each QRS complex",
        rejected: { verdict: "contradicted", issue: "no ECG waveform, QRS complex or ST segment is visible: the image is a smooth grey gradient" },
      },
      {
        key: "placeholder",
        imageId: "img1",
        label: "no legible ECG waveform",
        location: "whole image",
        characteristics: "smooth grey gradient with a brighter centre; no grid, no tracing",
      },
    ],
    instructions: ["Report only what the image shows: it carries no readable tracing, so the ST segments cannot be assessed from it."],
  },
  searches: [
    {
      a: "ste",
      b: "recip",
      query: "inferior ST elevation with reciprocal ST depression in aVL versus pericarditis",
      matches: /reciprocal/i,
      corpus: ["corpus://cardiology/inferior-leads", "corpus://cardiology/reciprocal-changes", "corpus://cardiology/pericarditis-ecg"],
      relation: "associated-with",
      results: [
        demoResult("ecg-localisation", "Localising ST elevation on the 12-lead ECG (demo review)", "ST elevation confined to leads II, III and aVF, with reciprocal ST depression in aVL, localises acute transmural ischaemia to the inferior wall. Acute pericarditis instead gives widespread concave ST elevation without reciprocal depression (apart from aVR).", 0.91),
        demoResult("chest-pain-ecg", "ECG patterns in acute chest pain (demo notes)", "Reciprocal change is a strong pointer to infarction rather than pericarditis.", 0.78),
      ],
      knowledge: [
        { key: "k-territory", label: "ST elevation in II, III and aVF with reciprocal depression in aVL indicates acute inferior transmural ischaemia", relatesTo: "both", relation: "explains" },
        { key: "k-pericarditis", label: "pericarditis gives widespread ST elevation without reciprocal ST depression", relatesTo: "b", relation: "contradicts" },
      ],
    },
    {
      a: "trop",
      b: "pain",
      query: "troponin rise with ischaemic chest pain definition of myocardial infarction",
      matches: /troponin/i,
      corpus: ["corpus://cardiology/troponin-basics", "corpus://cardiology/stemi-definition", "corpus://cardiology/typical-ischaemic-pain"],
      relation: "supports",
      results: [
        demoResult("mi-definition", "Defining acute myocardial infarction (demo summary)", "Acute myocardial infarction is a rise of cardiac troponin above the 99th percentile upper reference limit together with evidence of ischaemia: typical symptoms or new ischaemic ECG changes.", 0.93),
      ],
      knowledge: [{ key: "k-mi", label: "a troponin rise with ischaemic symptoms and ECG changes meets the definition of acute myocardial infarction", relatesTo: "both", relation: "supports" }],
    },
    {
      a: "htn",
      b: "pain",
      query: "hypertension chest pain aortic dissection presentation",
      matches: /dissection/i,
      corpus: ["corpus://cardiology/aortic-dissection-features", "corpus://cardiology/risk-factors", "corpus://cardiology/aortic-dissection-stemi"],
      relation: "associated-with",
      results: [
        demoResult("aortic-dissection", "Recognising acute aortic dissection (demo review)", "Hypertension is the leading risk factor for acute aortic dissection, which typically presents with abrupt tearing pain radiating to the back and a pulse or blood-pressure difference between the arms.", 0.88),
      ],
      knowledge: [
        { key: "k-htn-risk", label: "hypertension is the leading risk factor for aortic dissection", relatesTo: "a", relation: "associated-with" },
        { key: "k-dissection", label: "aortic dissection typically causes abrupt tearing pain radiating to the back", relatesTo: "b", relation: "associated-with" },
      ],
    },
  ],
  paths: {
    ecg: {
      answer: "B",
      summary: "Inferior STEMI: ST elevation in II, III and aVF with reciprocal depression in aVL, ischaemic pain and a raised troponin.",
      coherence: 0.93,
      rationale: "Symptoms, the territorial ST pattern and the troponin each lead to the next step; the answer follows.",
      steps: [
        {
          text: "The pain is crushing, substernal and radiates to the left arm, with sweating and nausea: a typical ischaemic presentation.",
          stage: "reasoning",
          claims: [
            painClaim,
            { text: "The patient is diaphoretic and nauseated", evidence: ["sweat"] },
          ],
        },
        {
          text: "ST elevation in II, III and aVF with reciprocal depression in aVL is the pattern of an acute inferior transmural infarct.",
          stage: "knowledge",
          claims: [
            steClaim,
            { text: "Reciprocal ST depression in aVL localises the injury to the inferior wall", evidence: ["recip", "k-territory"] },
          ],
        },
        {
          text: "A troponin I of 2.4 ng/mL confirms myocardial necrosis, so this is an inferior ST-elevation myocardial infarction.",
          stage: "reasoning",
          claims: [
            tropClaim,
            { text: "A troponin rise with ischaemic symptoms and ECG changes meets the definition of myocardial infarction", evidence: ["k-mi", "trop"] },
          ],
        },
      ],
    },
    risk: {
      answer: "B",
      summary: "Inferior STEMI in a hypertensive smoker: inferior ST elevation and a raised troponin.",
      coherence: 0.84,
      rationale: "Risk factors raise the prior and the ECG and troponin confirm it; the territorial pattern is not explained in detail.",
      steps: [
        {
          text: "A 58-year-old male smoker with hypertension has a high pre-test probability of coronary disease.",
          stage: "reasoning",
          claims: [
            { text: "The patient is a 58-year-old man", evidence: ["age"] },
            { text: "He has hypertension and a 30 pack-year smoking history", evidence: ["htn", "smoke"] },
          ],
        },
        {
          text: "The ECG shows inferior ST elevation and the troponin is raised, so the infarct is inferior.",
          stage: "reasoning",
          claims: [
            steClaim,
            tropClaim,
          ],
        },
      ],
    },
    pericarditis: {
      answer: "A",
      summary: "Acute pericarditis: chest pain with diffuse ST elevation.",
      coherence: 0.7,
      rationale: "The steps follow from one another, but the conclusion rests on reading the ST elevation as diffuse.",
      repairedTo: "pericarditisRepaired",
      steps: [
        pericarditisOpening,
        {
          text: "The ST elevation is diffuse, the pattern of acute pericarditis.",
          stage: "knowledge",
          claims: [
            {
              text: "The ST elevation is diffuse across the leads",
              evidence: ["ste", "recip"],
              flaw: {
                verdict: "contradicted",
                severity: "MEDIUM",
                issue: "The ECG shows ST elevation confined to II, III and aVF with reciprocal depression in aVL: a territorial pattern, not diffuse elevation.",
                instruction: "Use the quoted ECG findings: territorial ST elevation with reciprocal depression argues against pericarditis; reconsider the answer.",
              },
            },
            { text: "Widespread ST elevation without reciprocal depression is the pattern of pericarditis", evidence: ["k-pericarditis"] },
          ],
        },
      ],
    },
    pericarditisRepaired: {
      answer: "B",
      summary: "Revised from pericarditis: the ST elevation is territorial (II, III, aVF) with reciprocal depression in aVL and the troponin is raised, so this is an inferior STEMI.",
      coherence: 0.88,
      rationale: "The corrected reading of the ECG and the troponin lead to the answer.",
      steps: [
        pericarditisOpening,
        {
          text: "The ST elevation is confined to the inferior leads with reciprocal depression in aVL, which pericarditis does not produce.",
          stage: "knowledge",
          claims: [
            { text: "Reciprocal ST depression is present in aVL", evidence: ["recip"] },
            { text: "Reciprocal ST depression argues against pericarditis", evidence: ["k-pericarditis", "recip"] },
          ],
        },
        {
          text: "With a troponin I of 2.4 ng/mL this is an inferior ST-elevation myocardial infarction.",
          stage: "reasoning",
          claims: [tropClaim],
        },
      ],
    },
    dissection: {
      answer: "C",
      summary: "Aortic dissection, given severe chest pain in a hypertensive patient.",
      coherence: 0.45,
      rationale: "The risk factor is right, but the path ignores the territorial ST elevation and the troponin, and no tearing back pain is reported.",
      steps: [
        {
          text: "Severe chest pain in a hypertensive patient raises the question of aortic dissection.",
          stage: "reasoning",
          claims: [
            { text: "The patient has a history of hypertension", evidence: ["htn"] },
            { text: "Blood pressure is 150/95 mmHg", evidence: ["bp"] },
          ],
        },
        {
          text: "Hypertension is the main risk factor for aortic dissection.",
          stage: "knowledge",
          claims: [{ text: "Hypertension is the leading risk factor for aortic dissection", evidence: ["k-htn-risk"] }],
        },
      ],
    },
  },
  rollouts: ["ecg", "risk", "pericarditis", "ecg", "dissection"],
};
