#!/usr/bin/env node
// The CLI runs the TypeScript sources through tsx, so a clone works without a build step.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
