/**
 * The operator's access files: API keys with their team (tenant) and roles
 * (MEDMMV_API_KEYS_FILE), and the EHR issuers each with its own JWKS and tenant
 * (MEDMMV_CDS_ISSUERS_FILE). Read once at start by config.ts; a bad file stops the start
 * with the entry at fault named, never its content beyond ids.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { MedmmvError } from "./contracts/errors.js";
import { describeZodIssues } from "./contracts/zod-issues.js";

/**
 * What a caller may do. `clinician`: submit, and read or delete the cases it submitted.
 * `auditor`: read every case of its tenant, its access trail and exports; search; never
 * submit or delete. `admin`: what an auditor may, and delete any case of its tenant.
 */
export const Role = z.enum(["clinician", "auditor", "admin"]);
export type Role = z.infer<typeof Role>;

const Id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/, "letters, digits and . _ : @ - (at most 128, starting with a letter or digit)");

/** One key of MEDMMV_API_KEYS_FILE: the file holds the key's SHA-256, never the key. */
export const ApiKeyEntry = z.strictObject({
  id: Id.describe("The key's id, shown in the access trail and as a case's submitter"),
  sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, "the hex SHA-256 of the key (64 hex digits), e.g. printf %s \"$KEY\" | sha256sum").transform((s) => s.toLowerCase()),
  tenant: Id.describe("The team the key belongs to"),
  roles: z.array(Role).min(1).transform((r) => [...new Set(r)]),
});
export type ApiKeyEntry = z.infer<typeof ApiKeyEntry>;

/** One EHR of MEDMMV_CDS_ISSUERS_FILE: its `iss`, the JWKS its tokens must be signed with, its tenant. */
export const IssuerEntry = z.strictObject({
  iss: z.string().min(1).max(500),
  jwks: z
    .string()
    .min(1)
    .max(2000)
    .refine((j) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(j) || /^https:\/\//i.test(j), "must be an https URL (keys fetched over http can be swapped on the way) or a local JWKS file")
    .describe("An https URL of this EHR's JWKS, or a local JWKS file"),
  tenant: Id,
});
export type IssuerEntry = z.infer<typeof IssuerEntry>;

function readJsonFile(variable: string, file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new MedmmvError("CONFIG_INVALID", `${variable}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new MedmmvError("CONFIG_INVALID", `${variable}: ${file} is not JSON; it must be a JSON array`);
  }
}

function parseList<T extends z.ZodType>(variable: string, file: string, entry: T, unique: (e: z.infer<T>) => string[]): Array<z.infer<T>> {
  const parsed = z.array(entry).min(1).safeParse(readJsonFile(variable, file));
  if (!parsed.success) throw new MedmmvError("CONFIG_INVALID", `${variable} (${file}): ${describeZodIssues(parsed.error).message}`);
  const seen = new Set<string>();
  parsed.data.forEach((e, i) => {
    for (const k of unique(e)) {
      if (seen.has(k)) throw new MedmmvError("CONFIG_INVALID", `${variable} (${file}): [${i}] repeats ${k.split("\u0000")[0]} of an earlier entry; each must be unique`);
      seen.add(k);
    }
  });
  return parsed.data;
}

export function readApiKeysFile(file: string): ApiKeyEntry[] {
  return parseList("MEDMMV_API_KEYS_FILE", file, ApiKeyEntry, (e) => [`id\u0000${e.id}`, `sha256\u0000${e.sha256}`]);
}

/** A JWKS as the place it is read from: a URL normalised, a file by its absolute path. */
function jwksPlace(jwks: string): string {
  if (/^https:\/\//i.test(jwks)) {
    try {
      return new URL(jwks).href;
    } catch {
      return jwks;
    }
  }
  return path.resolve(jwks);
}

/** Each issuer its own JWKS: two issuers sharing one could each sign as the other (EHR A's key acting in EHR B's tenant). */
export function readIssuersFile(file: string): IssuerEntry[] {
  return parseList("MEDMMV_CDS_ISSUERS_FILE", file, IssuerEntry, (e) => [`iss\u0000${e.iss}`, `jwks\u0000${jwksPlace(e.jwks)}`]);
}
