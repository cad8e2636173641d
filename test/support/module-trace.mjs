// Preloaded into a child process (`NODE_OPTIONS=--import=<this file>`, MODULE_TRACE_FILE set):
// appends the URL of every module the process loads to MODULE_TRACE_FILE, one per line.
// ES modules are seen by a load hook (which also sees what tsx compiles), CommonJS modules
// (native addons, packages loaded with require) by a wrapper around Module._load. Plain
// JavaScript, because it runs before any TypeScript loader is registered.
import { appendFileSync } from "node:fs";
import { Module, register } from "node:module";
import { pathToFileURL } from "node:url";

const file = process.env.MODULE_TRACE_FILE;
if (file) {
  register(new URL("./module-trace-hooks.mjs", import.meta.url), { data: { file } });
  const load = Module._load;
  Module._load = function traced(request, parent, isMain) {
    let resolved = request;
    try {
      resolved = request.startsWith("node:") || Module.isBuiltin(request) ? request : pathToFileURL(Module._resolveFilename(request, parent, isMain)).href;
    } catch {
      // unresolvable: the real load below throws its own error
    }
    appendFileSync(file, `${resolved}\n`);
    return load.apply(this, arguments);
  };
}
