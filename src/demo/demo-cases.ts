import { fileURLToPath } from "node:url";

export interface DemoCase {
  /** Short name, used in output file names. */
  slug: string;
  file: string;
}

const example = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));

/**
 * The bundled example cases the demo runs, each with scripted model answers written for it
 * in test/support/scenarios/. The first is the main one (out/demo-result.json,
 * out/demo-report.html). A third, with a clinical pathway, joins once pathways exist.
 */
export const DEMO_CASES: readonly DemoCase[] = [
  { slug: "chest-pain", file: example("chest-pain.json") },
  { slug: "community-pneumonia", file: example("community-pneumonia.json") },
];
