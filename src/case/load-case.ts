import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import type { z } from "zod";
import { MedmmvError } from "../errors.js";
import { prepareCase } from "./images.js";
import { ClinicalCase, type PreparedCase } from "./schema.js";

/** "images[0].data" style path for a zod issue; "(root)" for the document itself. */
export function formatIssuePath(p: readonly PropertyKey[]): string {
  let out = "";
  for (const key of p) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out === "" ? "(root)" : out;
}

/** One readable message for all of a zod error's problems, each with its JSON path. */
export function describeZodIssues(error: z.ZodError): { message: string; issues: { path: string; message: string }[] } {
  const issues = error.issues.map((i) => ({ path: formatIssuePath(i.path), message: i.message }));
  return { message: issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues };
}

/**
 * Read a ClinicalCase JSON file for the CLI. Image `path`s are resolved against the case
 * file's folder, so a case and its images can be moved together.
 */
export async function loadCaseFile(file: string, opts: { maxBytes: number; maxPixels: number }): Promise<PreparedCase> {
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

  const parsed = ClinicalCase.safeParse(json);
  if (!parsed.success) {
    const { message, issues } = describeZodIssues(parsed.error);
    throw new MedmmvError("INVALID_INPUT", `case file ${resolved} is not a valid case: ${message}`, {
      details: { issues },
    });
  }

  return prepareCase(parsed.data, {
    maxBytes: opts.maxBytes,
    maxPixels: opts.maxPixels,
    baseDir: path.dirname(resolved),
    allowPath: true,
  });
}
