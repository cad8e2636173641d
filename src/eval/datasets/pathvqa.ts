import { ReadContext, asRecord, goldYesNo, itemError, readRecords, text } from "./common.js";
import type { AdapterOptions, DatasetAdapter, EvalItem, ItemError } from "./types.js";

/**
 * The answer of an LXMERT label dict `{answer: score}`: the highest-scoring key. PathVQA
 * gives one key with score 1, but other LXMERT exports carry soft scores.
 */
function labelAnswer(raw: unknown): string | null {
  const r = asRecord(raw);
  if (r === null) return null;
  let best: string | null = null;
  let bestScore = -Infinity;
  for (const [answer, score] of Object.entries(r)) {
    const s = typeof score === "number" ? score : 0;
    if (answer.trim() !== "" && s > bestScore) {
      best = answer.trim();
      bestScore = s;
    }
  }
  return best;
}

/**
 * PathVQA, official LXMERT json: one record per image, holding questions (`sentf.pvqa`) and
 * answers (`labelf.pvqa`) paired by position. Each pair becomes an item `${img_id}#${i}`.
 * Images are `${img_id}.jpg`; the official release keeps them in `images/<split>/`, so
 * the split sub-folder of --images is tried too.
 */
async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
  const ctx = new ReadContext("pathvqa", opts);
  for await (const rec of readRecords(file)) {
    const fallback = ctx.fallbackId(rec.index);
    if ("parseError" in rec) {
      yield itemError(fallback, rec.parseError);
      continue;
    }
    const r = asRecord(rec.value);
    const imgId = text(r?.["img_id"]);
    if (r === null || imgId === null) {
      yield itemError(fallback, `record ${rec.index} is not an image record with an img_id`);
      continue;
    }
    const questions = asRecord(r["sentf"])?.["pvqa"];
    const labels = asRecord(r["labelf"])?.["pvqa"];
    if (!Array.isArray(questions) || !Array.isArray(labels)) {
      yield itemError(fallback, `record ${imgId} lacks sentf.pvqa or labelf.pvqa arrays`);
      continue;
    }

    const split = /^([a-z]+)_/.exec(imgId)?.[1];
    const imgs = await ctx.resolveImages(imgId, [`${imgId}.jpg`], (n) => (split ? [`${split}/${n}`] : []));

    const pairs = Math.max(questions.length, labels.length);
    for (let i = 0; i < pairs; i++) {
      const claimed = ctx.claimId(`${imgId}#${i}`);
      const id = claimed.id;
      const warnings = claimed.warning ? [claimed.warning] : [];
      if (i >= questions.length || i >= labels.length) {
        yield itemError(id, `record ${imgId} has ${questions.length} questions but ${labels.length} answers; pair ${i} is incomplete`);
        continue;
      }
      const question = text(questions[i]);
      const answer = labelAnswer(labels[i]);
      if (question === null || answer === null) {
        yield itemError(id, `item ${id} has an empty question or no answer label`);
        continue;
      }
      if (!imgs.ok) {
        yield { id, error: { ...imgs.error.error } };
        continue;
      }
      const yesNo = goldYesNo(answer);
      const strata: Record<string, string> = { answer_type: yesNo !== null ? "CLOSED" : "OPEN" };
      if (imgs.stratum) strata["images"] = imgs.stratum;
      yield ctx.finish({
        id,
        case: { question, ...(imgs.images.length > 0 ? { images: imgs.images } : {}) },
        gold: yesNo !== null ? { kind: "closed", text: yesNo } : { kind: "open", text: answer },
        strata,
        warnings: [...warnings, ...imgs.warnings],
      });
    }
  }
}

export function pathvqaAdapter(): DatasetAdapter {
  return { name: "pathvqa", read };
}
