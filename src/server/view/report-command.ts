import { randomBytes } from "node:crypto";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { LoadedImage } from "../../core/contracts/clinical-case.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import type { StoredCaseInput } from "../store/case-store.js";
import { renderCaseViewHtml, type CaseViewCaseInput, type CaseViewImageInput, type CaseViewInput } from "./render-view.js";
import { isRecord } from "../../core/contracts/is-record.js";

/** What `medmmv report` needs: the result, the full graph when known, the case when known. */
export type ReportInput = Omit<CaseViewInput, "mode" | "nonce">;

function caseFrom(v: unknown): CaseViewCaseInput | null {
  if (!isRecord(v) || typeof v.question !== "string") return null;
  const images: CaseViewImageInput[] = Array.isArray(v.images)
    ? v.images.filter(isRecord).map((i) => ({
        id: String(i.id ?? ""),
        mimeType: String(i.mimeType ?? ""),
        ...(typeof i.data === "string" ? { data: i.data } : {}),
        ...(typeof i.caption === "string" ? { caption: i.caption } : {}),
      }))
    : [];
  const out: CaseViewCaseInput = { question: v.question, images };
  if (typeof v.notes === "string") out.notes = v.notes;
  if (isRecord(v.options)) out.options = Object.fromEntries(Object.entries(v.options).map(([k, x]) => [k, String(x)]));
  return out;
}

/**
 * Reads the JSON a user hands to `medmmv report`: a bare DiagnosisResult (`diagnose --json`;
 * from `diagnose --out` with the full graph as `fullEvidenceGraph` beside its fields),
 * or an object holding `result` plus optionally `fullEvidenceGraph` and the case as
 * `caseInput`, `case` or `input` (a stored case record). The result itself is validated when
 * the page is rendered.
 */
export function reportInputFromJson(json: unknown): ReportInput {
  if (!isRecord(json)) throw new MedmmvError("INVALID_INPUT", "report input must be a JSON object");
  if (isRecord(json.result)) {
    const graph = json.fullEvidenceGraph;
    return {
      result: json.result as unknown as ReportInput["result"],
      fullEvidenceGraph: isRecord(graph) ? graph : null,
      caseInput: caseFrom(json.caseInput) ?? caseFrom(json.case) ?? caseFrom(json.input),
    };
  }
  if (typeof json.caseId === "string" && Array.isArray(json.candidates)) {
    // `diagnose --out` writes the full graph beside the result's own fields.
    const { fullEvidenceGraph: graph, ...result } = json;
    return { result: result as unknown as ReportInput["result"], fullEvidenceGraph: isRecord(graph) ? graph : null, caseInput: null };
  }
  throw new MedmmvError("INVALID_INPUT", "expected a DiagnosisResult or an object with a `result` field");
}

/**
 * The case as the view shows it, from a stored case and the images loaded back from the store
 * (by sha256, in the same order; a missing image is listed without its bytes).
 */
export function caseViewInputFromStored(input: StoredCaseInput, images: Array<LoadedImage | null | undefined>): CaseViewCaseInput {
  const out: CaseViewCaseInput = {
    question: input.question,
    images: input.images.map((ref, i) => {
      const loaded = images[i];
      const img: CaseViewImageInput = { id: ref.id, mimeType: loaded?.mimeType ?? ref.mimeType };
      if (loaded && loaded.sha256 === ref.sha256) img.data = loaded.data;
      if (ref.caption !== undefined) img.caption = ref.caption;
      if (ref.dicom) img.dicom = ref.dicom;
      return img;
    }),
  };
  if (input.notes !== undefined) out.notes = input.notes;
  if (input.options !== undefined) out.options = input.options;
  return out;
}

/**
 * Writes the offline audit report: one self-contained HTML file (scripts, styles, data and
 * images inlined) that opens from disk with no network. Written to a temporary file and renamed,
 * so an interrupted run never leaves half a report where the audit record expects a whole one.
 */
export async function writeOfflineReport(input: ReportInput, outFile: string): Promise<{ file: string; bytes: number }> {
  const html = renderCaseViewHtml({ ...input, mode: "offline" });
  const file = path.resolve(outFile);
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(tmp, html, "utf8");
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new MedmmvError("INVALID_INPUT", `cannot write the report to ${outFile}`, { cause: e });
  }
  return { file, bytes: Buffer.byteLength(html) };
}
