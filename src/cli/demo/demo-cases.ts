import { fileURLToPath } from "node:url";

export interface DemoCase {
  /** Short name, used in output file names. */
  slug: string;
  file: string;
  /** Conversation turns `serve --demo` posts on the finished case, in order (answers scripted too). */
  questions?: readonly string[];
}

const example = (name: string) => fileURLToPath(new URL(`../../../examples/${name}`, import.meta.url));

/**
 * The bundled example cases the demo runs, each with scripted model answers written for it
 * in src/scripted/scenarios/. The first is the main one (out/demo-result.json,
 * out/demo-report.html). The third carries a clinical pathway (pathways/bone-marrow.json).
 */
export const DEMO_CASES: readonly DemoCase[] = [
  { slug: "chest-pain", file: example("chest-pain.json") },
  { slug: "community-pneumonia", file: example("community-pneumonia.json") },
  {
    slug: "bone-marrow",
    file: example("bone-marrow.json"),
    questions: ["Is the aspirate image of sufficient quality for analysis?", "Is the photographed region suitable for counting cells?", "So what is the diagnosis?"],
  },
];
