import { createHash } from "node:crypto";
import type { LoadedImage, PreparedCase } from "../../src/core/contracts/clinical-case.js";
import { encodePng } from "../../src/scripted/image-bytes.js";

/**
 * Invented cases for the benchmark (not benchmark items). The long case states more than
 * nine separate facts, so the scripted TextDoctor finds ≥ 9 and the web-search planner
 * plans the maximum of 8 fact pairs.
 */
const LONG_NOTES = [
  "A 67-year-old woman presents to the emergency department with progressive shortness of breath over three days.",
  "She reports a productive cough with rust-coloured sputum.",
  "She has had fevers up to 39.2 degrees Celsius with rigors.",
  "She describes sharp right-sided chest pain that worsens on deep inspiration.",
  "Her past medical history includes type 2 diabetes mellitus and chronic obstructive pulmonary disease.",
  "She takes metformin and an inhaled long-acting bronchodilator.",
  "She smoked 40 pack-years and stopped five years ago.",
  "On examination her respiratory rate is 28 breaths per minute.",
  "Oxygen saturation is 88 percent on room air.",
  "There is dullness to percussion and bronchial breathing over the right lower zone.",
  "Blood pressure is 96/58 mmHg with a heart rate of 118 beats per minute.",
  "White cell count is 19.4 with a neutrophilia.",
  "Serum urea is 9.1 mmol/L and C-reactive protein is 310 mg/L.",
  "She is newly confused and disoriented to time.",
].join(" ");

const SHORT_NOTES = "A 67-year-old woman has three days of cough with rust-coloured sputum. She has fevers up to 39.2 degrees Celsius.";

const OPTIONS = {
  A: "Community-acquired pneumonia, severe (CURB-65 of 4)",
  B: "Acute exacerbation of COPD without infection",
  C: "Pulmonary embolism",
  D: "Acute decompensated heart failure",
  E: "Lung abscess",
};

/** A deterministic, incompressible RGB PNG (noise), so image bytes look like a real scan's. */
export function noisePng(side: number, seed: number): Buffer {
  let s = seed >>> 0 || 1;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) >>> 24);
  const raw = Buffer.alloc(side * (1 + side * 3));
  for (let y = 0; y < side; y++) {
    const row = y * (1 + side * 3);
    raw[row] = 0; // filter: none
    for (let x = 0; x < side * 3; x++) raw[row + 1 + x] = rand();
  }
  return encodePng(side, side, 2, raw);
}


const images = new Map<number, LoadedImage>();

/** A 128×128 noise PNG: about 66 KB of base64, the order of a downscaled radiograph. */
export function benchImage(i: number): LoadedImage {
  const cached = images.get(i);
  if (cached) return cached;
  const png = noisePng(128, 1000 + i);
  const img: LoadedImage = { id: `img${i + 1}`, mimeType: "image/png", data: png.toString("base64"), caption: `Chest radiograph view ${i + 1}`, sha256: createHash("sha256").update(png).digest("hex"), width: 128, height: 128 };
  images.set(i, img);
  return img;
}

export interface CaseShape {
  length: "short" | "long";
  images: number;
}

export function benchCase(id: string, shape: CaseShape = { length: "long", images: 1 }): PreparedCase {
  return {
    id,
    question: "What is the most likely diagnosis?",
    notes: shape.length === "long" ? LONG_NOTES : SHORT_NOTES,
    options: OPTIONS,
    patient: { age: 67, sex: "female" },
    images: Array.from({ length: shape.images }, (_, i) => benchImage(i)),
  };
}

/**
 * The bench case as a REST client sends it to `POST /diagnose`: JSON, images as base64 `data`,
 * no id (the server chooses one). Request `i` gets a question of its own, so no two requests of
 * a run are the same case.
 */
export function requestBody(i: number, shape?: CaseShape): string {
  const c = benchCase(`unused-${i}`, shape);
  return JSON.stringify({ question: `${c.question} (request ${i})`, notes: c.notes, options: c.options, patient: c.patient, images: c.images.map((img) => ({ id: img.id, mimeType: img.mimeType, data: img.data, caption: img.caption })) });
}
