// The one-line summaries of commands whose modules main.ts loads only when the command line
// names them: `medmmv --help` lists them from here without loading the modules.

export const EVAL_SUMMARY = "evaluate a method on a benchmark file: DIR/results.jsonl (one line per finished item), DIR/summary.json, DIR/summary.md";
