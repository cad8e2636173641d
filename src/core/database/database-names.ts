import { MedmmvError } from "../contracts/errors.js";

/**
 * The one database the case store and the offline corpus index share: the SQLite file under
 * MEDMMV_DATA_DIR, or a schema of the PostgreSQL database at DATABASE_URL.
 */
export const SQLITE_FILE_NAME = "medmmv.sqlite";

/** A schema name we can splice into SQL unquoted-safe: lower-case identifier, at most 63 characters. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function checkSchemaName(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new MedmmvError("CONFIG_INVALID", "Postgres schema name must match [a-z_][a-z0-9_]* (at most 63 characters)");
  }
  return schema;
}

