import { expect } from "vitest";
import { MedmmvError } from "../../src/core/contracts/errors.js";

/** The MedmmvError a promise rejects with; fails the test if it resolves or rejects with anything else. */
export async function rejection(p: Promise<unknown>): Promise<MedmmvError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(MedmmvError);
  return e as MedmmvError;
}
