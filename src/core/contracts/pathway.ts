import { z } from "zod";

/** The reserved label of an answer that names no category of its step. */
export const NO_MATCH = "no-match";

/**
 * What one pathway may hold (docs/architecture.md#clinical-pathways-and-conversations). Real
 * pathways are small (bone-marrow: 5 steps, 2–4 categories, 183 keywords); these leave
 * room for ten times that, and keep the labeller's automaton and the consistency checks,
 * which run on every answer, far below a millisecond of work each.
 */
export const PATHWAY_LIMITS = {
  steps: 20,
  categoriesPerStep: 12,
  keywordsPerCategory: 100,
  /** Words in one keyword. */
  keywordWords: 8,
  keywordChars: 100,
  /** Keywords and negated keywords of all steps together. */
  totalKeywords: 1000,
  /** Characters of all keywords and negation cues together. */
  totalPatternChars: 20_000,
  paths: 100,
  /** The pathway as JSON, in characters. */
  documentChars: 256 * 1024,
} as const;

/** A pathway, step, category or path id. */
export const PATHWAY_ID = /^[a-z0-9][a-z0-9-]{0,63}$/;

const Id = z
  .string()
  .regex(PATHWAY_ID, "ids are lower-case letters, digits and '-' (at most 64), e.g. \"cell-quality\"");

const Keyword = z
  .string()
  .trim()
  .min(1, "a keyword must not be empty")
  .max(PATHWAY_LIMITS.keywordChars)
  .refine((k) => k.split(/\s+/).length <= PATHWAY_LIMITS.keywordWords, { message: `a keyword has at most ${PATHWAY_LIMITS.keywordWords} words` });

export const PathwayCategory = z
  .object({
    id: Id.refine((id) => id !== NO_MATCH, { message: `"${NO_MATCH}" is reserved: every step has it implicitly` }).describe(
      "Category id, unique within its step",
    ),
    label: z.string().min(1).max(200).describe("Human-readable name of the category"),
    keywords: z
      .array(Keyword)
      .max(PATHWAY_LIMITS.keywordsPerCategory)
      .describe(
        "Words or phrases that put an answer in this category, matched as whole words in any case with inflections removed (plurals, -ed, -ing, -ly: \"abnormalities\" meets \"abnormality\"); a trailing * matches any ending of the last word. A keyword counts only when it is not negated or hedged.",
      ),
    negatedKeywords: z
      .array(Keyword)
      .max(PATHWAY_LIMITS.keywordsPerCategory)
      .optional()
      .describe("Words or phrases that put an answer in this category when they are negated (\"no abnormalities\" → normal); weaker than a keyword of another category"),
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
    categories: z.array(PathwayCategory).min(1, "a step needs at least one category").max(PATHWAY_LIMITS.categoriesPerStep).describe("The admissible answers of this step"),
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
    sequence: z
      .record(z.string().max(64), z.string().max(64))
      .refine((s) => Object.keys(s).length <= PATHWAY_LIMITS.steps, { message: `a sequence names at most ${PATHWAY_LIMITS.steps} steps` })
      .describe("stepId → categoryId along this valid path"),
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
    steps: z.array(PathwayStep).min(1, "a pathway needs at least one step").max(PATHWAY_LIMITS.steps).describe("The decision steps, in their standard order"),
    paths: z.array(PathwayPath).min(1, "a pathway needs at least one valid path").max(PATHWAY_LIMITS.paths).describe("The valid paths (the set S)"),
  })
  .strict()
  .superRefine((p, ctx) => {
    const keywords = p.steps.flatMap((s) => s.categories.flatMap((c) => [...c.keywords, ...(c.negatedKeywords ?? []), ...(c.negations ?? [])]));
    const negationCues = p.steps.reduce((n, s) => n + s.categories.reduce((m, c) => m + (c.negations?.length ?? 0), 0), 0);
    if (keywords.length - negationCues > PATHWAY_LIMITS.totalKeywords)
      ctx.addIssue({ code: "custom", path: ["steps"], message: `the pathway has ${keywords.length - negationCues} keywords; at most ${PATHWAY_LIMITS.totalKeywords} are allowed` });
    const chars = keywords.reduce((n, k) => n + k.length, 0);
    if (chars > PATHWAY_LIMITS.totalPatternChars)
      ctx.addIssue({ code: "custom", path: ["steps"], message: `the pathway's keywords and negation cues have ${chars} characters; at most ${PATHWAY_LIMITS.totalPatternChars} are allowed` });
    const size = JSON.stringify(p).length;
    if (size > PATHWAY_LIMITS.documentChars)
      ctx.addIssue({ code: "custom", path: [], message: `the pathway is ${size} characters as JSON; at most ${PATHWAY_LIMITS.documentChars} are allowed` });
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
