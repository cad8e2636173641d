import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { isItemError, type EvalItem, type ItemError } from "../../../src/eval/datasets/index.js";

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

/** A temporary folder for this test file (made before, removed after); call the result for its path. */
export function useTempDir(prefix: string): () => string {
  let dir = "";
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), prefix));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  return () => dir;
}
