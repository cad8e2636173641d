/**
 * Run before every test file (vitest `setupFiles`). The files of one worker share their
 * modules (`isolate: false`), so process-wide state that a real process keeps for its whole
 * life must start empty for each file: what a model server revealed is learned per endpoint
 * and model, and a later file's scripted server can be given a port an earlier file's server
 * used, which would hand it lessons (an image limit, a structured-output mode) it never taught.
 */
import { forgetAdaptations } from "../../src/core/llm/model-adaptation.js";

forgetAdaptations();
