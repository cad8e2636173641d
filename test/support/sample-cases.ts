import type { PreparedCase } from "../../src/core/contracts/clinical-case.js";

/** Our own example case text (not a benchmark item). */
export function chestPainCase(id = "case-test-1"): PreparedCase {
  return {
    id,
    question: "What is the most likely diagnosis?",
    notes:
      "A 58-year-old man presents with crushing substernal chest pain radiating to the left arm for 40 minutes. He is diaphoretic and nauseated. History of hypertension and smoking 30 pack-years. ECG shows ST elevation in leads II, III and aVF. Troponin I is 2.4 ng/mL.",
    options: { A: "Acute pericarditis", B: "Inferior ST-elevation myocardial infarction", C: "Aortic dissection", D: "Pulmonary embolism", E: "Gastro-oesophageal reflux" },
    patient: { age: 58, sex: "male" },
    images: [],
  };
}
