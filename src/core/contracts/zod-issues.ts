import type { z } from "zod";

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
export function describeZodIssues(error: z.ZodError, limit = Infinity): { message: string; issues: { path: string; message: string }[] } {
  const issues = error.issues.slice(0, limit).map((i) => ({ path: formatIssuePath(i.path), message: i.message }));
  return { message: issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues };
}
