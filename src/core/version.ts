import { readFileSync } from "node:fs";

/** The package version, recorded in every result's provenance. */
export const VERSION: string = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
