import { MedmmvError } from "../../core/contracts/errors.js";
import { clinhalluAdapter } from "./clinhallu.js";
import { healthbenchAdapter } from "./healthbench.js";
import { jsonlAdapter } from "./jsonl.js";
import { medmcqaAdapter } from "./medmcqa.js";
import { medqaAdapter } from "./medqa.js";
import { medxpertqaAdapter } from "./medxpertqa.js";
import { medframeqaAdapter } from "./medframeqa.js";
import { pathvqaAdapter } from "./pathvqa.js";
import type { DatasetAdapter, DatasetName } from "./types.js";
import { vqaRadAdapter } from "./vqa-rad.js";

export type * from "./types.js";
export { isItemError } from "./types.js";

const FACTORIES: Record<DatasetName, () => DatasetAdapter> = {
  medxpertqa: medxpertqaAdapter,
  medframeqa: medframeqaAdapter,
  medqa: medqaAdapter,
  medmcqa: medmcqaAdapter,
  pathvqa: pathvqaAdapter,
  "vqa-rad": vqaRadAdapter,
  jsonl: jsonlAdapter,
  clinhallu: clinhalluAdapter,
  healthbench: healthbenchAdapter,
};

export const DATASET_NAMES = Object.keys(FACTORIES) as DatasetName[];

/** A fresh adapter per call: `describe()` reports on that adapter's own read. */
export function getAdapter(name: string): DatasetAdapter {
  const factory = Object.hasOwn(FACTORIES, name) ? FACTORIES[name as DatasetName] : undefined;
  if (!factory) {
    throw new MedmmvError("INVALID_INPUT", `unknown dataset "${name}"; use one of ${DATASET_NAMES.join(", ")}`);
  }
  return factory();
}
