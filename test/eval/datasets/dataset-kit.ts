import { readFile } from "node:fs/promises";
import { expect } from "vitest";
import { isItemError, type EvalItem, type ItemError } from "../../../src/eval/datasets/index.js";

// Lives in test/support now; re-exported so the tests that import it from here keep working.
export { useTempDir } from "../../support/temp-dir.js";

/** Shared helpers of the adapter tests. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** The items, asserting there was no per-item error. */
export function onlyItems(xs: (EvalItem | ItemError)[]): EvalItem[] {
  expect(xs.filter(isItemError)).toEqual([]);
  return xs as EvalItem[];
}

/** A sample file's records as distributed, to compare the adapter's output with. */
export async function readJsonl<T>(file: string): Promise<T[]> {
  return (await readFile(file, "utf8"))
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}
