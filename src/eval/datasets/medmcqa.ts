import { MedmmvError } from "../../core/contracts/errors.js";
import { ReadContext, asRecord, itemError, readRecords, strataFrom, text, eachDatasetRecord } from "./common.js";
import type { AdapterOptions, DatasetAdapter, EvalItem, ItemError } from "./types.js";

const OPTION_FIELDS = [
  ["A", "opa"],
  ["B", "opb"],
  ["C", "opc"],
  ["D", "opd"],
] as const;

export interface CopBaseDecision {
  copBase: 0 | 1;
  copBaseSource: "option" | "detected" | "default";
  copBaseReason: string;
}

/** `cop` as an integer (the Drive files and the HF copy both use numbers; strings are tolerated). */
function copValue(raw: unknown): number | null {
  const n = typeof raw === "string" && raw.trim() !== "" ? Number(raw) : raw;
  return typeof n === "number" && Number.isInteger(n) ? n : null;
}

/**
 * The HF copy numbers `cop` from 0, the original Drive files from 1, and nothing in a
 * record says which. A 0 anywhere can only be 0-based and a 4 only 1-based; a file with
 * neither (only 1–3) is ambiguous and read as the HF copy, which is what most people have.
 * The unlabelled test split's -1 says nothing and is ignored.
 */
export async function detectCopBase(file: string): Promise<CopBaseDecision> {
  let zeroAt: number | null = null;
  let fourAt: number | null = null;
  for await (const rec of readRecords(file)) {
    if ("parseError" in rec) continue;
    const cop = copValue(asRecord(rec.value)?.["cop"]);
    if (cop === 0 && zeroAt === null) zeroAt = rec.index;
    if (cop === 4 && fourAt === null) fourAt = rec.index;
  }
  if (zeroAt !== null && fourAt !== null) {
    throw new MedmmvError(
      "INVALID_INPUT",
      `MedMCQA file ${file} has cop = 0 (record ${zeroAt}) and cop = 4 (record ${fourAt}), so it is neither ` +
        `0-based nor 1-based; fix the file or set the cop base explicitly (medmcqaCopBase 0 or 1)`,
    );
  }
  if (zeroAt !== null) {
    return { copBase: 0, copBaseSource: "detected", copBaseReason: `cop = 0 in record ${zeroAt}` };
  }
  if (fourAt !== null) {
    return { copBase: 1, copBaseSource: "detected", copBaseReason: `cop = 4 in record ${fourAt}` };
  }
  return {
    copBase: 0,
    copBaseSource: "default",
    copBaseReason: "no cop = 0 or cop = 4 in the file; assumed 0-based (the Hugging Face copy)",
  };
}

export function medmcqaAdapter(): DatasetAdapter {
  let decision: CopBaseDecision | null = null;

  async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
    const setting = opts.medmcqaCopBase ?? "auto";
    decision =
      setting === "auto"
        ? await detectCopBase(file)
        : { copBase: setting, copBaseSource: "option", copBaseReason: `set to ${setting}-based by the caller` };
    const base = decision.copBase;

    const ctx = new ReadContext("medmcqa", opts);
    yield* eachDatasetRecord(ctx, file, "id", async function* ({ id, warnings, record: r }) {
      const question = text(r["question"]);
      if (question === null) {
        yield itemError(id, `item ${id} has no question`);
        return;
      }
      const options: Record<string, string> = {};
      for (const [letter, field] of OPTION_FIELDS) {
        const t = text(r[field]);
        if (t !== null) options[letter] = t;
        else warnings.push(`option ${letter} (${field}) is empty and was left out`);
      }

      const cop = copValue(r["cop"]);
      if (cop === null || cop < 0) {
        yield itemError(id, `item ${id} has no gold answer (cop = ${JSON.stringify(r["cop"])}); the MedMCQA test split is unlabelled — use the validation split`);
        return;
      }
      const letter = OPTION_FIELDS[cop - base]?.[0];
      if (letter === undefined) {
        yield itemError(id, `item ${id}: cop = ${cop} is out of range for ${base}-based numbering`);
        return;
      }
      const goldText = options[letter];
      if (goldText === undefined) {
        yield itemError(id, `item ${id}: the correct option ${letter} is empty`);
        return;
      }

      yield ctx.finish({
        id,
        case: { question, options },
        gold: { kind: "choice", option: letter, text: goldText },
        strata: strataFrom(r, ["subject_name", "choice_type"]),
        warnings,
      });
    });
  }

  return {
    name: "medmcqa",
    read,
    describe: () => (decision === null ? {} : { ...decision }),
  };
}
