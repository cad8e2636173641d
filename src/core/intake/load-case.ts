import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../contracts/errors.js";
import { prepareCase } from "./case-intake.js";
import { describeZodIssues } from "../contracts/zod-issues.js";
import { ClinicalCase, type PreparedCase } from "../contracts/clinical-case.js";
import { bundleToCase, type BundleToCaseOptions } from "./fhir/bundle-to-case.js";
import type { IntakeSettings } from "./intake-settings.js";

/**
 * Read a case file for the CLI, with the same intake settings the server uses (intakeSettings:
 * decoded bytes, DICOM frames, DICOMweb servers, …): a ClinicalCase JSON file, or a FHIR R4
 * Bundle (any JSON with a `resourceType`), read into a case exactly as POST /diagnose reads one
 * (`fhir` carries the same limits). Image `path`s of a ClinicalCase are resolved against the
 * case file's folder, so a case and its images can be moved together.
 */
export async function loadCaseFile(file: string, settings: IntakeSettings & { fhir?: Omit<BundleToCaseOptions, "maxImageBytes"> }): Promise<PreparedCase> {
  const { fhir, ...opts } = settings;
  const resolved = path.resolve(file);
  // A case holds at most 16 base64 images (4/3 of their bytes) plus text; anything far
  // larger is not a case file, and reading it whole would only waste memory.
  const maxFileBytes = Math.ceil((16 * opts.maxBytes * 4) / 3) + 2 * 1024 * 1024;
  let text: string;
  try {
    const st = await stat(resolved);
    if (!st.isFile()) throw new Error("not a regular file");
    if (st.size > maxFileBytes) {
      throw new MedmmvError(
        "PAYLOAD_TOO_LARGE",
        `case file ${resolved} is ${st.size} bytes; the limit is ${maxFileBytes} bytes`,
      );
    }
    text = await readFile(resolved, "utf8");
  } catch (e) {
    if (e instanceof MedmmvError) throw e;
    const code = (e as { code?: unknown }).code;
    throw new MedmmvError(
      "INVALID_INPUT",
      `cannot read case file ${resolved} (${typeof code === "string" ? code : (e as Error).message})`,
      { cause: e },
    );
  }

  let json: unknown;
  try {
    json = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (e) {
    throw new MedmmvError("INVALID_INPUT", `case file ${resolved} is not valid JSON: ${(e as Error).message}`, {
      cause: e,
    });
  }

  // A FHIR resource: read as the API reads application/fhir+json (a Bundle; anything else is refused saying so).
  if (json && typeof json === "object" && !Array.isArray(json) && typeof (json as { resourceType?: unknown }).resourceType === "string") {
    try {
      json = bundleToCase(json, { ...fhir, maxImageBytes: opts.maxBytes });
    } catch (e) {
      if (e instanceof MedmmvError) throw new MedmmvError(e.code, `${resolved}: ${e.message}`, { cause: e, ...(e.details ? { details: e.details } : {}) });
      throw e;
    }
  }

  const parsed = ClinicalCase.safeParse(json);
  if (!parsed.success) {
    const { message, issues } = describeZodIssues(parsed.error);
    throw new MedmmvError("INVALID_INPUT", `case file ${resolved} is not a valid case: ${message}`, {
      details: { issues },
    });
  }

  return prepareCase(parsed.data, {
    ...opts,
    baseDir: path.dirname(resolved),
    allowPath: true,
  });
}
