import { z } from "zod";

/** The reserved label of an answer that names no category of its step. */
export const NO_MATCH = "no-match";

/** A pathway, step, category or path id. */
export const PATHWAY_ID = /^[a-z0-9][a-z0-9-]{0,63}$/;

const Id = z
  .string()
  .regex(PATHWAY_ID, "ids are lower-case letters, digits and '-' (at most 64), e.g. \"cell-quality\"");

export const PathwayCategory = z
  .object({
    id: Id.refine((id) => id !== NO_MATCH, { message: `"${NO_MATCH}" is reserved: every step has it implicitly` }).describe(
      "Category id, unique within its step",
    ),
    label: z.string().min(1).max(200).describe("Human-readable name of the category"),
    keywords: z
      .array(z.string().trim().min(1, "a keyword must not be empty").max(200))
      .max(200)
      .describe(
        "Words or phrases that put an answer in this category, matched on word boundaries (a plural s/es is allowed; a trailing * matches any word ending). All-capital acronyms (AML, RBC) match case-sensitively, everything else ignores case. A keyword counts only when it is not negated.",
      ),
    negations: z
      .array(z.string().trim().min(1).max(100))
      .max(50)
      .optional()
      .describe("Extra negation cues for this category, beyond the built-in ones (no, not, without, cannot, absence of …)"),
  })
  .strict();
export type PathwayCategory = z.infer<typeof PathwayCategory>;

export const PathwayStep = z
  .object({
    id: Id.describe("Step id, unique within the pathway"),
    question: z.string().min(1).max(2000).describe("The question a clinician asks at this step"),
    categories: z.array(PathwayCategory).min(1, "a step needs at least one category").max(50).describe("The admissible answers of this step"),
    judgeFallback: z
      .boolean()
      .optional()
      .describe("When true, an answer the keywords leave at no-match is given to the judge model, constrained to this step's category ids (off by default)"),
  })
  .strict();
export type PathwayStep = z.infer<typeof PathwayStep>;

export const PathwayPath = z
  .object({
    id: Id.describe("Path id, unique within the pathway"),
    outcome: z.string().min(1).max(200).describe("What this valid path concludes"),
    sequence: z.record(z.string(), z.string()).describe("stepId → categoryId along this valid path"),
  })
  .strict();
export type PathwayPath = z.infer<typeof PathwayPath>;

/**
 * docs/architecture.md#clinical-pathways-and-conversations: a clinical pathway. `paths` is the set S of valid rules; the cross-references
 * (every sequence names existing steps and categories) are checked here, each problem with
 * the JSON path of the bad entry and the names of what is wrong.
 */
export const Pathway = z
  .object({
    id: Id.describe("Pathway id (the file name in pathways/ without .json)"),
    title: z.string().min(1).max(300).describe("Human-readable title"),
    notes: z.array(z.string().max(2000)).max(50).optional().describe("Free notes for readers (sources, known disagreements); JSON has no comments"),
    steps: z.array(PathwayStep).min(1, "a pathway needs at least one step").max(50).describe("The decision steps, in their standard order"),
    paths: z.array(PathwayPath).min(1, "a pathway needs at least one valid path").max(500).describe("The valid paths (the set S)"),
  })
  .strict()
  .superRefine((p, ctx) => {
    const steps = new Map<string, Set<string>>();
    p.steps.forEach((s, i) => {
      if (steps.has(s.id)) ctx.addIssue({ code: "custom", path: ["steps", i, "id"], message: `step id "${s.id}" is used twice` });
      const cats = new Set<string>();
      s.categories.forEach((c, j) => {
        if (cats.has(c.id))
          ctx.addIssue({ code: "custom", path: ["steps", i, "categories", j, "id"], message: `category id "${c.id}" is used twice in step "${s.id}"` });
        cats.add(c.id);
      });
      steps.set(s.id, cats);
    });
    const pathIds = new Set<string>();
    p.paths.forEach((path, i) => {
      if (pathIds.has(path.id)) ctx.addIssue({ code: "custom", path: ["paths", i, "id"], message: `path id "${path.id}" is used twice` });
      pathIds.add(path.id);
      const entries = Object.entries(path.sequence);
      if (entries.length === 0) ctx.addIssue({ code: "custom", path: ["paths", i, "sequence"], message: `path "${path.id}" has an empty sequence` });
      for (const [stepId, catId] of entries) {
        const cats = steps.get(stepId);
        if (!cats) {
          ctx.addIssue({
            code: "custom",
            path: ["paths", i, "sequence", stepId],
            message: `path "${path.id}" names step "${stepId}", which is not a step of this pathway (steps: ${[...steps.keys()].join(", ")})`,
          });
        } else if (!cats.has(catId)) {
          ctx.addIssue({
            code: "custom",
            path: ["paths", i, "sequence", stepId],
            message: `path "${path.id}" gives step "${stepId}" the category "${catId}", which that step does not have (categories: ${[...cats].join(", ")})`,
          });
        }
      }
    });
  });
export type Pathway = z.infer<typeof Pathway>;
