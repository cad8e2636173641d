import { Command, CommanderError } from "commander";
import { VERSION } from "../core/version.js";
import { isMedmmvError } from "../core/contracts/errors.js";
import { EXIT, intArg } from "./cli-args.js";
import { registerCorpusCommands } from "./corpus-command.js";
import { EVAL_SUMMARY } from "./command-summaries.js";

// Each command's module is imported when it runs: the pipeline, the server, the eval runner
// and the scripted demo servers are not loaded for `--help`, `--version`, a usage error or
// the other commands. A top-level import here costs every command its load time, so new
// commands follow the same pattern: `await import()` inside the action.
const program = new Command()
  .name("medmmv")
  .description("Reliable, verifiable clinical reasoning with multimodal LLMs (MedMMV).")
  .version(VERSION)
  // A usage error says what was wrong and where the help is, not the whole help (a hundred lines that bury the message).
  .showHelpAfterError("(run with --help for the options)")
  // Each command's options only after its own name: `eval report DIR --json` is the
  // report's --json, not the parent eval's. Inherited by every command added below.
  .enablePositionalOptions()
  // Usage errors (unknown option, bad value, missing argument) throw instead of exiting 1,
  // so they exit EXIT.usage (2) below. Also inherited by every command added below.
  .exitOverride();

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
    const { diagnoseCommand } = await import("./diagnose-command.js");
    process.exitCode = await diagnoseCommand(file, opts);
  });

program
  .command("demo")
  .description("run the three bundled example cases against scripted model and search servers started in-process")
  .option("--json", "print the DiagnosisResult JSON instead of the summary")
  .option("--out <file>", "where to write the result", "out/demo-result.json")
  .option("--serve", "instead, run the REST API, event stream and audit view on loopback with the scripted model (= serve --demo)")
  .action(async (opts: { json?: boolean; out: string; serve?: boolean }) => {
    if (opts.serve) {
      const { serveCommand } = await import("./serve-command.js");
      process.exitCode = await serveCommand({ demo: true });
      return;
    }
    const { demoCommand } = await import("./demo-command.js");
    process.exitCode = await demoCommand(opts);
  });

program
  .command("serve")
  .description("start the REST API (HOST:PORT, default 127.0.0.1:8787)")
  .option("--workers <n>", "server processes on one port and one store (default MEDMMV_WORKERS, 1): one per core to use", intArg(1, 256))
  .option("--demo", "loopback only, backed by a scripted model started in-process, with the example cases submitted; prints the docs URL, an API key and audit-view links")
  .action(async (opts: { workers?: number; demo?: boolean }) => {
    const { serveCommand } = await import("./serve-command.js");
    process.exitCode = await serveCommand(opts);
  });

program
  .command("report")
  .description("write the audit view of a case as one self-contained HTML file that opens offline")
  .argument("<source>", "a DiagnosisResult JSON file (from diagnose --json / --out), or a case id in the store")
  .requiredOption("-o, --out <file>", "the HTML file to write")
  .action(async (source: string, opts: { out: string }) => {
    const { reportCommand } = await import("./report-command.js");
    process.exitCode = await reportCommand(source, opts);
  });

const audit = program.command("audit").description("the access trail: who accessed which case, when, with what outcome (tamper-evident, per tenant)");
audit
  .command("verify")
  .description("walk every tenant's hash chain in the store, checking signatures with MEDMMV_AUDIT_SIGNING_KEY; exit 1 naming every changed, removed, invented or re-hashed event")
  .option("--anchor <file>", "also prove the trail still holds the heads `medmmv audit anchor` printed into this file")
  .action(async (opts: { anchor?: string }) => {
    const { auditVerifyCommand } = await import("./audit-command.js");
    process.exitCode = await auditVerifyCommand(opts);
  });
audit
  .command("anchor")
  .description("print every tenant's current chain head, signed with MEDMMV_AUDIT_SIGNING_KEY, to keep outside the store (for verify --anchor)")
  .action(async () => {
    const { auditAnchorCommand } = await import("./audit-command.js");
    process.exitCode = await auditAnchorCommand();
  });
audit
  .command("export")
  .description("write the access trail as FHIR AuditEvents (IHE BALP), one JSON object a line (NDJSON), for a SIEM")
  .option("--from <instant>", "recorded at or after (ISO 8601 date or instant)")
  .option("--to <instant>", "recorded before (ISO 8601 date or instant)")
  .option("--tenant <id>", "only this tenant's events")
  .option("--out <file>", "write to this file instead of stdout")
  .action(async (opts: { from?: string; to?: string; out?: string; tenant?: string }) => {
    const { auditExportCommand } = await import("./audit-command.js");
    process.exitCode = await auditExportCommand(opts);
  });

program
  .command("chat")
  .description("run a case, then ask questions about it turn by turn; answers are checked against a clinical pathway")
  .argument("<case>", "ClinicalCase JSON file")
  .option("--pathway <id|file>", "a pathway id from pathways/ (e.g. bone-marrow) or a pathway .json file; overrides the case's own")
  .option("--script <file>", "answer the questions in this file (one per line; \"[step] question\" names the step) instead of reading stdin")
  .option("--k <n>", "number of rollouts", intArg(1, 32))
  .option("--max-repairs <n>", "repair budget per path", intArg(0, 10))
  .option("--json", "print the result and each turn as JSON lines")
  .action(async (file: string, opts) => {
    const { chatCommand } = await import("./chat-command.js");
    process.exitCode = await chatCommand(file, opts);
  });

program
  .command("models")
  .description("check the configured models")
  .command("check")
  .description("probe each configured model with a few tiny requests (at most 10): temperature, structured-output modes, images per request, reasoning; print what works and the settings to use")
  .option("--json", "print { model, temperature, structuredOutput, imagesPerRequest, reasoning, … } as JSON")
  .action(async (opts: { json?: boolean }) => {
    const { modelsCheckCommand } = await import("./models-command.js");
    process.exitCode = await modelsCheckCommand(opts);
  });

// `eval` declares its options from the datasets, methods and studies it runs, which import
// most of src/eval; its module is loaded only when the command line names it. Otherwise it
// is listed by its summary alone (`medmmv --help`).
if (commandNamed(process.argv.slice(2)) === "eval") (await import("./eval-command.js")).registerEvalCommands(program);
else program.command("eval").description(EVAL_SUMMARY);
registerCorpusCommands(program);
// One item process of `medmmv eval --workers N`, started by the eval itself (src/eval/item-workers.ts).
program.command("eval-worker", { hidden: true }).action(async () => {
  const { runItemWorker } = await import("../eval/item-worker.js");
  await runItemWorker();
  // Its runner is done with it: open sockets of the model client must not keep it alive.
  process.exit(0);
});

/** The command the arguments name: the first operand, or the one after `help` (`medmmv help eval`). */
function commandNamed(args: string[]): string | undefined {
  const operands = args.filter((a) => !a.startsWith("-"));
  return operands[0] === "help" ? operands[1] : operands[0];
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // commander has already printed its message (naming the flag) and the help; --help and --version exit 0.
    process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  } else {
    process.stderr.write(`medmmv: ${isMedmmvError(err) ? err.message : err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = EXIT.usage;
  }
}
