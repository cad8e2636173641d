import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pathwaysDirFromEnv } from "../config.js";
import { MedmmvError } from "../contracts/errors.js";
import { describeZodIssues } from "../contracts/zod-issues.js";
import { Pathway, PATHWAY_ID, PATHWAY_LIMITS } from "../contracts/pathway.js";

/**
 * The pathway registry (docs/architecture.md#clinical-pathways-and-conversations). A request
 * names a pathway by id — one bundled in `pathways/` or one in the operator's
 * MEDMMV_PATHWAYS_DIR — or sends the pathway itself. It never names a file: an id is checked
 * against PATHWAY_ID before anything touches the disk, and no error says where the registry
 * lives, what it holds on disk or why the operating system refused a read.
 */

/** The pathways shipped with medmmv (bundled data, like prompts/). */
export const PATHWAYS_DIR = fileURLToPath(new URL("../../../pathways/", import.meta.url));

/** Validate a pathway object; errors name the bad entry by its JSON path ("paths[2].sequence.diagnosis"). */
export function parsePathway(json: unknown, source = "pathway"): Pathway {
  const parsed = Pathway.safeParse(json);
  if (parsed.success) return parsed.data;
  const { message, issues } = describeZodIssues(parsed.error);
  throw new MedmmvError("INVALID_INPUT", `${source} is not a valid pathway: ${message}`, { details: { issues } });
}

/** A registry file → its pathway; `name` is what errors call it (the id, never the path). */
function readRegistryFile(file: string, name: string): Pathway {
  let text: string;
  try {
    // Refused before reading: the registry's files are data of a known size, not whatever is there.
    if (statSync(file).size > PATHWAY_LIMITS.documentChars * 4) throw new MedmmvError("INVALID_INPUT", `pathway "${name}" is larger than a pathway may be`);
    text = readFileSync(file, "utf8");
  } catch (e) {
    if (e instanceof MedmmvError) throw e;
    throw new MedmmvError("INVALID_INPUT", `pathway "${name}" could not be read`, { cause: e });
  }
  let json: unknown;
  try {
    json = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (e) {
    throw new MedmmvError("INVALID_INPUT", `pathway "${name}" is not valid JSON`, { cause: e });
  }
  const p = parsePathway(json, `pathway "${name}"`);
  if (p.id !== name) throw new MedmmvError("INVALID_INPUT", `pathway "${name}" has id "${p.id}"; the id must equal the file name`);
  return p;
}

function idsIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => f.slice(0, -5))
    .filter((id) => PATHWAY_ID.test(id));
}

/** Where the registry looks: the bundled folder and the configured one (`opts.dir` in place of MEDMMV_PATHWAYS_DIR). */
function registryDirs(opts: { dir?: string | null }): string[] {
  const extra = opts.dir !== undefined ? opts.dir : pathwaysDirFromEnv();
  return extra && path.resolve(extra) !== path.resolve(PATHWAYS_DIR) ? [PATHWAYS_DIR, extra] : [PATHWAYS_DIR];
}

/** Ids of the registry's pathways, sorted. */
export function listPathways(opts: { dir?: string | null } = {}): string[] {
  return [...new Set(registryDirs(opts).flatMap(idsIn))].sort();
}

// Registry pathways are read once per process (per folder and id): they are data, like prompts.
const cache = new Map<string, Pathway>();

/** A pathway by registry id, or a pathway object (validated). Anything else is a 400 that names no file. */
export function loadPathway(ref: string | unknown, opts: { dir?: string | null } = {}): Pathway {
  if (typeof ref !== "string") return parsePathway(ref);
  if (!PATHWAY_ID.test(ref))
    // Not echoed: what is not an id may be a path, and a 400 should not read it back.
    throw new MedmmvError("INVALID_INPUT", `the pathway named is not a pathway id (lower-case letters, digits and '-', at most 64); name one of the registry (${listPathways(opts).join(", ") || "none"}) or send the pathway itself`);
  const dirs = registryDirs(opts);
  const holders = dirs.filter((d) => idsIn(d).includes(ref));
  if (holders.length === 0) {
    const known = listPathways(opts);
    throw new MedmmvError("INVALID_INPUT", `unknown pathway "${ref}"; known pathways: ${known.join(", ") || "(none)"}`, { details: { known } });
  }
  if (holders.length > 1) throw new MedmmvError("INVALID_INPUT", `pathway "${ref}" is both bundled and in the configured pathway directory; rename one`);
  const file = path.join(holders[0]!, `${ref}.json`);
  const hit = cache.get(file);
  if (hit) return hit;
  const p = readRegistryFile(file, ref);
  cache.set(file, p);
  return p;
}
