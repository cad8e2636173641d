import { Command, InvalidArgumentError } from "commander";
import { VERSION } from "../version.js";
import { isMedmmvError } from "../errors.js";
import { diagnoseCommand } from "./diagnose-command.js";
import { demoCommand } from "./demo-command.js";

/** Exit codes: 0 ok, 1 the case/run failed, 2 usage or configuration error. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export function intArg(min: number, max: number) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    return n;
  };
}

const program = new Command()
  .name("medmmv")
  .description("Reliable, verifiable clinical reasoning with multimodal LLMs (MedMMV).")
  .version(VERSION)
  .showHelpAfterError();

program
  .command("diagnose")
  .description("run one case file through the MedMMV pipeline")
  .argument("<case>", "ClinicalCase JSON file (images by `path` relative to the file, or base64 `data`)")
  .option("--k <n>", "number of rollouts", intArg(1, 32))
  .option("--max-repairs <n>", "repair budget per path", intArg(0, 10))
  .option("--adaptive", "sample rollouts in rounds; stop early when they agree")
  .option("--json", "print the DiagnosisResult JSON instead of the summary")
  .option("--out <file>", "also write the DiagnosisResult JSON to this file")
  .action(async (file: string, opts) => {
    process.exitCode = await diagnoseCommand(file, opts);
  });

program
  .command("demo")
  .description("run a bundled example case against a scripted model server started in-process")
  .option("--json", "print the DiagnosisResult JSON instead of the summary")
  .option("--out <file>", "where to write the result", "out/demo-result.json")
  .action(async (opts) => {
    process.exitCode = await demoCommand(opts);
  });

program
  .command("serve")
  .description("start the REST API (HOST:PORT, default 127.0.0.1:8787)")
  .action(async () => {
    const { serveCommand } = await import("./serve-command.js");
    process.exitCode = await serveCommand();
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`medmmv: ${isMedmmvError(err) ? err.message : err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = EXIT.usage;
}
