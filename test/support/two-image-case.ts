import { prepareCase } from "../../src/core/intake/case-intake.js";
import { jpegWithCanvas, smallPng } from "../../src/scripted/image-bytes.js";
import { chestPainCase } from "./sample-cases.js";

/** The chest-pain case with two small images (a PNG and a JPEG): what a provider's image rules meet. */
export async function twoImageCase(id: string) {
  const base = chestPainCase(id);
  return prepareCase(
    {
      id,
      question: base.question,
      notes: base.notes,
      options: base.options,
      images: [
        { id: "ecg", data: smallPng(24, 16).toString("base64") },
        { id: "cxr", data: jpegWithCanvas(20, 20).toString("base64") },
      ],
    },
    { maxBytes: 5_000_000, maxPixels: 10_000_000, allowPath: false },
  );
}
