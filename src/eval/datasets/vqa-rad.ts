import { ReadContext, goldYesNo, itemError, text, eachDatasetRecord } from "./common.js";
import type { AdapterOptions, DatasetAdapter, EvalItem, GoldAnswer, ItemError } from "./types.js";

/**
 * VQA-RAD (OSF original `VQA_RAD Dataset Public.json`, a JSON array; JSONL also read).
 * Traps: `answer_type` values with trailing spaces ("CLOSED "), and integer answers.
 */
async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
  const ctx = new ReadContext("vqa-rad", opts);
  yield* eachDatasetRecord(ctx, file, "qid", async function* ({ id, warnings, record: r }) {
    const question = text(r["question"]);
    const answer = text(r["answer"]);
    const imageName = text(r["image_name"]);
    if (question === null || answer === null || imageName === null) {
      yield itemError(id, `item ${id} lacks a question, answer or image_name`);
      return;
    }

    const yesNo = goldYesNo(answer);
    let answerType = text(r["answer_type"])?.toUpperCase() ?? null;
    if (answerType !== "CLOSED" && answerType !== "OPEN") {
      const inferred = yesNo !== null ? "CLOSED" : "OPEN";
      warnings.push(`answer_type ${JSON.stringify(r["answer_type"])} is not CLOSED/OPEN; treated as ${inferred}`);
      answerType = inferred;
    }
    // Closed questions are mostly yes/no; the few others ("left", "axial") keep their text
    // and are graded like open answers.
    const gold: GoldAnswer =
      answerType === "CLOSED" ? { kind: "closed", text: yesNo ?? answer } : { kind: "open", text: answer };

    const strata: Record<string, string> = { answer_type: answerType };
    const organ = text(r["image_organ"]);
    if (organ !== null) strata["image_organ"] = organ;
    const qType = text(r["question_type"]);
    if (qType !== null) strata["question_type"] = qType;

    const imgs = await ctx.itemImages(id, [imageName], { strata, warnings });
    if ("error" in imgs) {
      yield imgs;
      return;
    }

    yield ctx.finish({
      id,
      case: { question, ...imgs },
      gold,
      strata,
      warnings,
    });
  });
}

export function vqaRadAdapter(): DatasetAdapter {
  return { name: "vqa-rad", read };
}
