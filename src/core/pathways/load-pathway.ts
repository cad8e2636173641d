import { existsSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MedmmvError } from "../contracts/errors.js";
import { describeZodIssues } from "../contracts/zod-issues.js";
import { Pathway, PATHWAY_ID } from "../contracts/pathway.js";

/** The pathways shipped with medmmv (bundled data, like prompts/). */
export const PATHWAYS_DIR = fileURLToPath(new URL("../../../pathways/", import.meta.url));

/** Validate a pathway object; errors name the bad entry by its JSON path ("paths[2].sequence.diagnosis"). */
export function parsePathway(json: unknown, source = "pathway"): Pathway {
  const parsed = Pathway.safeParse(json);
  if (parsed.success) return parsed.data;
  const { message, issues } = describeZodIssues(parsed.error);
  throw new MedmmvError("INVALID_INPUT", `${source} is not a valid pathway: ${message}`, { details: { issues } });
}

function readPathwayFile(file: string): Pathway {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new MedmmvError("INVALID_INPUT", `cannot read pathway file ${file} (${(e as { code?: string }).code ?? (e as Error).message})`, { cause: e });
  }
  let json: unknown;
  try {
    json = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (e) {
    throw new MedmmvError("INVALID_INPUT", `pathway file ${file} is not valid JSON: ${(e as Error).message}`, { cause: e });
  }
  return parsePathway(json, `pathway file ${file}`);
}

/** Ids of the pathways in a directory (file names without .json). */
export function listPathways(dir = PATHWAYS_DIR): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => f.slice(0, -5))
    .filter((id) => PATHWAY_ID.test(id))
    .sort();
}

// Bundled pathways are read once per process: they are data that ships with the code.
const cache = new Map<string, Pathway>();

/**
 * A pathway by id from `pathways/` (the id must be the file's name and its `id`), a
 * pathway object (validated), or — for the CLI — a path to a `.json` file.
 */
export function loadPathway(ref: string | unknown, opts: { dir?: string } = {}): Pathway {
  if (typeof ref !== "string") return parsePathway(ref);
  if (ref.endsWith(".json")) return readPathwayFile(path.resolve(ref));
  const dir = opts.dir ?? PATHWAYS_DIR;
  if (!PATHWAY_ID.test(ref)) throw new MedmmvError("INVALID_INPUT", `pathway id "${ref.slice(0, 80)}" is not an id (lower-case letters, digits and '-')`);
  const key = `${dir}\u0000${ref}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const known = listPathways(dir);
  if (!known.includes(ref))
    throw new MedmmvError("INVALID_INPUT", `unknown pathway "${ref}"; known pathways: ${known.join(", ") || "(none)"}`, { details: { known } });
  const p = readPathwayFile(path.join(dir, `${ref}.json`));
  if (p.id !== ref) throw new MedmmvError("INVALID_INPUT", `pathway file ${ref}.json has id "${p.id}"; the id must equal the file name`);
  cache.set(key, p);
  return p;
}
