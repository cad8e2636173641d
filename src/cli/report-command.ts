import { readFile, stat } from "node:fs/promises";
import { loadConfig } from "../core/config.js";
import { describeError, MedmmvError } from "../core/contracts/errors.js";
import { caseViewInputFromStored, reportInputFromJson, writeOfflineReport, type ReportInput } from "../server/view/report-command.js";
import { EXIT } from "./cli-args.js";

/** A result file, or a case id looked up in the configured store (local access: no owner check). */
async function loadReportInput(source: string): Promise<ReportInput> {
  const isFile = await stat(source).then((s) => s.isFile(), () => false);
  if (isFile) {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(source, "utf8"));
    } catch {
      throw new MedmmvError("INVALID_INPUT", `${source} is not valid JSON`);
    }
    return reportInputFromJson(json);
  }
  const { openStore } = await import("../server/store/open-store.js");
  const store = await openStore(loadConfig().store);
  try {
    const record = await store.getCase(source);
    if (!record) throw new MedmmvError("NOT_FOUND", `${source} is neither a file nor a case id in the store (${store.backend})`);
    if (!record.result) throw new MedmmvError("CONFLICT", `case ${source} is ${record.status}; a report needs a finished case`);
    const images = await Promise.all(record.input.images.map((i) => store.getImage(i.sha256)));
    return { result: record.result, fullEvidenceGraph: record.fullEvidenceGraph, caseInput: caseViewInputFromStored(record.input, images), turns: await store.listTurns(source) };
  } finally {
    await store.close();
  }
}

/** `medmmv report <result.json | case id> -o report.html` */
export async function reportCommand(source: string, opts: { out: string }): Promise<number> {
  try {
    const input = await loadReportInput(source);
    const { file, bytes } = await writeOfflineReport(input, opts.out);
    process.stdout.write(`medmmv report: wrote ${file} (${Math.round(bytes / 1024)} KiB, self-contained; opens offline)\n`);
    return EXIT.ok;
  } catch (err) {
    const e = describeError(err);
    process.stderr.write(`medmmv report: ${e.message}\n`);
    return err instanceof MedmmvError && e.code !== "INTERNAL" ? EXIT.usage : EXIT.failed;
  }
}
