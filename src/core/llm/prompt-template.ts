import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { MedmmvError } from "../contracts/errors.js";

/**
 * Prompt templates live in prompts/<agent>.md with named slots `{{slot}}`. The sha256 of
 * each template's source goes into provenance.prompts, so a stored result says exactly
 * which prompt version produced it.
 */
export interface PromptTemplate {
  name: string;
  source: string;
  hash: string; // "sha256:<hex>"
  slots: string[];
  render(values: Record<string, string>): string;
  /**
   * The rendered text cut where the slot `at` stands (the slot itself left out): the part
   * before it and the part after it, for a caller that puts something between them.
   */
  renderAround(at: string, values: Record<string, string>): [before: string, after: string];
}

export const PROMPTS_DIR = fileURLToPath(new URL("../../../prompts/", import.meta.url));

export function parseTemplate(name: string, source: string): PromptTemplate {
  const slots = [...new Set([...source.matchAll(/\{\{([a-zA-Z][a-zA-Z0-9_]*)\}\}/g)].map((m) => m[1]!))];
  const hash = "sha256:" + createHash("sha256").update(source).digest("hex");
  const fill = (text: string, values: Record<string, string>, except?: string) => {
    const missing = slots.filter((s) => s !== except && values[s] === undefined);
    if (missing.length) throw new MedmmvError("INTERNAL", `prompt ${name}: missing slot(s) ${missing.join(", ")}`);
    // One pass, so a value that itself contains "{{x}}" is never expanded again.
    return text.replace(/\{\{([a-zA-Z][a-zA-Z0-9_]*)\}\}/g, (_, s: string) => values[s]!);
  };
  return {
    name,
    source,
    hash,
    slots,
    render: (values) => fill(source, values),
    renderAround(at, values) {
      const token = `{{${at}}}`;
      const i = source.indexOf(token);
      if (i < 0 || source.indexOf(token, i + token.length) >= 0) throw new MedmmvError("INTERNAL", `prompt ${name}: slot ${at} must occur exactly once`);
      return [fill(source.slice(0, i), values, at), fill(source.slice(i + token.length), values, at)];
    },
  };
}

export class PromptLibrary {
  private readonly templates = new Map<string, PromptTemplate>();
  /** `transform` rewrites a template's source before it is parsed and hashed (a variant of the shipped prompts has its own hashes). */
  constructor(dir: string = PROMPTS_DIR, transform: (name: string, source: string) => string = (_name, source) => source) {
    for (const f of readdirSync(dir)) {
      if (!f.endsWith(".md")) continue;
      const name = f.slice(0, -3);
      this.templates.set(name, parseTemplate(name, transform(name, readFileSync(path.join(dir, f), "utf8"))));
    }
  }
  get(name: string): PromptTemplate {
    const t = this.templates.get(name);
    if (!t) throw new MedmmvError("INTERNAL", `prompt template prompts/${name}.md not found`);
    return t;
  }
  /** name → hash of every template, for provenance. */
  hashes(names?: string[]): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [n, t] of this.templates) if (!names || names.includes(n)) out[n] = t.hash;
    return out;
  }
}
