import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Secrets already read or made, by file: one read per process. */
const cache = new Map<string, Buffer>();
const FILE = "pseudonym-secret";

/**
 * The secret patient pseudonyms are keyed with: MEDMMV_PSEUDONYM_SECRET when configured,
 * else one generated once and stored in the data directory (`<MEDMMV_DATA_DIR>/pseudonym-secret`,
 * mode 0600), so a patient keeps the same pseudonym across restarts and processes that share
 * the directory. Replicas on different machines must share a configured secret.
 */
export function pseudonymSecret(configured: string | undefined, dataDir: string): Buffer {
  if (configured) return Buffer.from(configured, "utf8");
  const file = path.resolve(dataDir, FILE);
  const known = cache.get(file);
  if (known) return known;
  let secret: Buffer;
  try {
    secret = Buffer.from(readFileSync(file, "utf8").trim(), "base64url");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    mkdirSync(path.dirname(file), { recursive: true });
    const made = randomBytes(32).toString("base64url");
    try {
      // "wx": two processes starting together keep whichever wrote first.
      writeFileSync(file, `${made}\n`, { mode: 0o600, flag: "wx" });
      secret = Buffer.from(made, "base64url");
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== "EEXIST") throw raced;
      secret = Buffer.from(readFileSync(file, "utf8").trim(), "base64url");
    }
  }
  if (secret.length < 16) throw new Error(`${file} holds no usable secret; delete it to have a new one made, or set MEDMMV_PSEUDONYM_SECRET`);
  cache.set(file, secret);
  return secret;
}
