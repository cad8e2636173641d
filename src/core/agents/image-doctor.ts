import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import type { NewEvidenceNode } from "../contracts/evidence.js";
import { callAgent, describeCaseImages, neutralise, type AgentDeps } from "./agent-context.js";
import { ImageFindings, renderFindings, takesImages } from "./image-description.js";

export { ImageFindings } from "./image-description.js";

export const ImageCheck = z.object({
  hallucinationDetected: z.boolean().describe("True if any finding is not supported by the image"),
  findings: z.array(
    z.object({
      index: z.number().int().min(0).describe("Index of the finding in the list under review"),
      verdict: z.enum(["supported", "contradicted", "unsupported"]),
      issue: z.string().nullable().describe("What is wrong with the finding, or null"),
    }),
  ),
  improvementInstructions: z.array(z.string()),
});
export type ImageCheck = z.infer<typeof ImageCheck>;

export interface ImageDoctorResult {
  nodes: NewEvidenceNode[];
  /** The image-HD loop: each check and whether a revision followed. */
  checks: Array<{ attempt: number; hallucinationDetected: boolean; flagged: Array<{ label: string; issue: string }> }>;
  /** Why the findings were not checked against the images although checks were asked for (the judge's model takes no images). */
  uncheckedBecause?: string;
}

const MAX_IMAGE_REVISIONS = 1;

/**
 * ImageDoctor with the paper's "Image Doctor Analysis" loop: findings are checked by the
 * hd-supervisor with the images attached; flagged findings are revised once, and any
 * finding still not supported after that is kept out of the graph.
 */
export async function runImageDoctor(deps: AgentDeps, ctx: CallContext, c: PreparedCase, opts: { checkFindings: boolean }): Promise<ImageDoctorResult> {
  const imageIds = c.images.map((i) => i.id).join(", ");
  const known = new Set(c.images.map((i) => i.id));
  // The same call describes the images to a text-only model of the case (image-description.ts): made once for both.
  let findings: ImageFindings = await describeCaseImages(deps, ctx, c);
  const checks: ImageDoctorResult["checks"] = [];
  let verdicts: Map<number, ImageCheck["findings"][number]> = new Map();
  // A judge that takes no images would check the findings against nothing but their own words.
  const judgeBlind = opts.checkFindings && findings.findings.length > 0 && !takesImages(deps.llm, "judge");
  if (opts.checkFindings && findings.findings.length > 0 && !judgeBlind) {
    for (let attempt = 1; ; attempt++) {
      const check = await callAgent(deps, ctx, c, {
        agent: "image-hd", role: "judge", temperature: 0, schema: ImageCheck, withImages: true,
        slots: { imageIds, findings: renderFindings(findings) },
      });
      verdicts = new Map(check.findings.map((f) => [f.index, f]));
      const flagged = findings.findings
        .map((f, i) => ({ f, v: verdicts.get(i) }))
        .filter((x) => x.v && x.v.verdict !== "supported")
        .map((x) => ({ label: x.f.label, issue: x.v!.issue ?? x.v!.verdict }));
      const detected = check.hallucinationDetected || flagged.length > 0;
      checks.push({ attempt, hallucinationDetected: detected, flagged });
      if (!detected || attempt > MAX_IMAGE_REVISIONS) break;
      findings = await callAgent(deps, ctx, c, {
        agent: "image-revise", role: "vision", temperature: 0, schema: ImageFindings, withImages: true,
        slots: { imageIds, findings: renderFindings(findings), instructions: neutralise(check.improvementInstructions.join("\n") || flagged.map((x) => `${x.label}: ${x.issue}`).join("\n")) },
      });
    }
  }
  const nodes: NewEvidenceNode[] = [];
  findings.findings.forEach((f, i) => {
    if (!known.has(f.imageId)) return; // a finding on an image that does not exist is a hallucination
    const v = verdicts.get(i);
    if (v && v.verdict !== "supported") return;
    nodes.push({
      kind: "finding",
      category: "imaging",
      label: f.label,
      detail: [f.location, f.size, f.characteristics].filter(Boolean).join("; "),
      source: { agent: "image-doctor", imageId: f.imageId, region: f.location },
    });
  });
  return { nodes, checks, ...(judgeBlind ? { uncheckedBecause: `the judge's model (${deps.llm.modelFor("judge")}) takes no images` } : {}) };
}
