/**
 * Writes docs/configuration.md from the environment schema in src/core/config.ts: one row per
 * variable with its type or allowed values, its default and its description, all read from
 * the schema itself (zod 4). `npm run docs:config`; test/core/config-docs.test.ts fails when the
 * committed file differs from this output.
 *
 * Only the text between the markers is generated; what follows the end marker is kept as written.
 */
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { z } from "zod";
import { EnvSchema } from "../src/core/config.js";

export const BEGIN = "<!-- BEGIN GENERATED: npm run docs:config -->";
export const END = "<!-- END GENERATED -->";
export const DOC_PATH = fileURLToPath(new URL("../docs/configuration.md", import.meta.url));

const HEADER = `# Configuration

medmmv reads its settings from environment variables in one place only: \`src/core/config.ts\`.
Everything else receives a typed \`Config\`. CLI flags override the environment where a flag
exists. An empty value counts as unset. An invalid value stops the start with
\`CONFIG_INVALID\` and a message naming the variable.

The table below is generated from the schema (\`npm run docs:config\`). Do not edit it by hand;
change the \`.describe()\` text in \`src/core/config.ts\` instead.
`;

/** Internal shape of a zod 4 schema, as far as this script reads it. */
interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  defaultValue?: unknown;
  entries?: Record<string, string>;
  coerce?: boolean;
  checks?: Array<{ _zod: { def: { check: string; format?: string; value?: unknown; inclusive?: boolean; minimum?: number; maximum?: number } } }>;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

export interface VariableDoc {
  name: string;
  type: string;
  default: string;
  description: string;
}

function describeType(schema: z.ZodType): { type: string; default: unknown; hasDefault: boolean } {
  let s = schema;
  let dflt: unknown;
  let hasDefault = false;
  for (;;) {
    const d = defOf(s);
    if (d.type === "optional" || d.type === "nullable") s = d.innerType!;
    else if (d.type === "default" || d.type === "prefault") {
      if (!hasDefault) {
        dflt = d.defaultValue;
        hasDefault = true;
      }
      s = d.innerType!;
    } else if (d.type === "pipe") s = d.in!;
    else break;
  }
  const d = defOf(s);
  const checks = (d.checks ?? []).map((c) => c._zod.def);
  const bounds: string[] = [];
  let min: string | null = null;
  let max: string | null = null;
  let int = false;
  let format: string | null = null;
  for (const c of checks) {
    if (c.check === "greater_than") min = `${c.inclusive ? "≥" : ">"} ${String(c.value)}`;
    else if (c.check === "less_than") max = `${c.inclusive ? "≤" : "<"} ${String(c.value)}`;
    else if (c.check === "number_format" && c.format?.includes("int")) int = true;
    else if (c.check === "string_format" && c.format) format = c.format;
    else if (c.check === "min_length") bounds.push(`length ≥ ${String(c.minimum)}`);
    else if (c.check === "max_length") bounds.push(`length ≤ ${String(c.maximum)}`);
  }
  if (min) bounds.unshift(min);
  if (max) bounds.splice(min ? 1 : 0, 0, max);
  let type: string;
  if (d.type === "enum") type = Object.values(d.entries ?? {}).map((v) => `\`${v}\``).join(" \\| ");
  else if (d.type === "number") type = int ? "integer" : "number";
  else if (d.type === "string") type = format ? (format === "url" ? "URL" : format) : "string";
  else type = d.type;
  if (bounds.length) type += ` (${bounds.join(", ")})`;
  return { type, default: dflt, hasDefault };
}

function renderDefault(value: unknown, hasDefault: boolean): string {
  if (!hasDefault) return "—";
  const text = Array.isArray(value) ? value.join(",") : String(value);
  return `\`${text}\``;
}

const cell = (text: string): string => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** One entry per variable of the schema, in the schema's order. */
export function variableDocs(): VariableDoc[] {
  return Object.entries(EnvSchema.shape).map(([name, schema]) => {
    const t = describeType(schema as z.ZodType);
    return { name, type: t.type, default: renderDefault(t.default, t.hasDefault), description: (schema as z.ZodType).description ?? "" };
  });
}

export function renderTable(): string {
  const rows = variableDocs().map((v) => `| \`${v.name}\` | ${v.type.includes("`") ? v.type : cell(v.type)} | ${v.default} | ${cell(v.description)} |`);
  return ["| variable | type / allowed values | default | description |", "|---|---|---|---|", ...rows].join("\n");
}

/** The whole document: header, the generated block, and whatever was written after the end marker. */
export function renderDoc(existing: string | null): string {
  const tail = existing && existing.includes(END) ? existing.slice(existing.indexOf(END) + END.length) : "\n";
  return `${HEADER}\n${BEGIN}\n${renderTable()}\n${END}${tail}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const existing = existsSync(DOC_PATH) ? readFileSync(DOC_PATH, "utf8") : null;
  writeFileSync(DOC_PATH, renderDoc(existing));
  process.stdout.write(`wrote ${DOC_PATH}\n`);
}
