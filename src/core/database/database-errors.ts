import path from "node:path";
import { causes, MedmmvError } from "../contracts/errors.js";

/**
 * First-run failures of opening the store, told as what to change: the variable to fix
 * and how. Driver messages are not repeated beyond their code (they may quote SQL), and a
 * database URL is shown without its password.
 */

/** postgres://user:***@host:5432/db — enough to recognise, nothing to steal. */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(not a URL)";
  }
}

const PG_EXAMPLE = "postgres://user:password@host:5432/database";

/** A DATABASE_URL that pg would misread (it treats any string as a host name): refuse it up front. */
export function checkDatabaseUrl(url: string): void {
  let u: URL | null = null;
  try {
    u = new URL(url);
  } catch {
    u = null;
  }
  if (!u || (u.protocol !== "postgres:" && u.protocol !== "postgresql:") || !u.hostname) {
    throw new MedmmvError("CONFIG_INVALID", `DATABASE_URL must be a PostgreSQL URL like ${PG_EXAMPLE}; unset it to use the embedded SQLite store under MEDMMV_DATA_DIR`);
  }
}

/** The driver's code down the cause chain, past our own STORE_FAILED wrapper (storeFailed). */
function driverCode(err: unknown): string | undefined {
  for (const e of causes(err, 4)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && code !== "STORE_FAILED") return code;
  }
  return undefined;
}

function postgresFix(code: string | undefined, shown: string): string | null {
  const where = `PostgreSQL at ${shown} (DATABASE_URL)`;
  switch (code) {
    case "ECONNREFUSED":
      return `nothing accepts connections at ${where}: start PostgreSQL there, or correct the host and port in DATABASE_URL`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `the host name in DATABASE_URL does not resolve (${shown}): correct the host in DATABASE_URL`;
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `${where} cannot be reached (${code}): check the host and port in DATABASE_URL and any firewall between`;
    case "28P01":
      return `${where} refused the password: correct the user and password in DATABASE_URL`;
    case "28000":
      return `${where} refused the role in DATABASE_URL (unknown user or not allowed by pg_hba.conf): correct the user in DATABASE_URL or allow it on the server`;
    case "3D000":
      return `the database named in DATABASE_URL does not exist at ${shown}: create it (createdb NAME) or correct the name in DATABASE_URL`;
    case "42501":
      return `the role in DATABASE_URL may not create tables at ${shown}: grant it CREATE on the database (or the schema), or use another role`;
    default:
      return null;
  }
}

const UNWRITABLE = new Set(["EACCES", "EPERM", "EROFS", "ENOTDIR", "EEXIST", "SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_IOERR"]);

/** The store could not be opened: say what to change, keeping the original as the cause. */
export function explainStoreOpenError(err: unknown, config: { databaseUrl: string | null; dataDir: string }): unknown {
  const code = driverCode(err);
  let fix: string | null;
  if (config.databaseUrl) {
    fix = postgresFix(code, redactDatabaseUrl(config.databaseUrl));
  } else {
    const dir = path.resolve(config.dataDir);
    fix =
      code && (UNWRITABLE.has(code) || code.startsWith("SQLITE_READONLY") || code.startsWith("SQLITE_CANTOPEN"))
        ? `the data directory ${dir} (MEDMMV_DATA_DIR) cannot be written (${code}): set MEDMMV_DATA_DIR to a directory this user can create and write, or give this user write access to it; or set DATABASE_URL to use PostgreSQL`
        : null;
  }
  return fix ? new MedmmvError("STORE_FAILED", fix, { cause: err, details: code ? { driverCode: code } : undefined }) : err;
}

/** A driver failure as STORE_FAILED; busy/serialisation failures are retryable. */
export function storeFailed(op: string, cause: unknown): MedmmvError {
  if (cause instanceof MedmmvError) return cause;
  const code = (cause as { code?: unknown } | null)?.code;
  const busy = code === "SQLITE_BUSY" || code === "40001" || code === "40P01" || code === "57P01";
  return new MedmmvError("STORE_FAILED", `store operation ${op} failed${typeof code === "string" ? ` (${code})` : ""}`, {
    cause,
    retryable: busy,
  });
}
