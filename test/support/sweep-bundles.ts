/**
 * vitest `globalSetup`: the test processes' bundles of the sources (bundled-process.ts) are
 * removed once their processes have ended, at the start of a run (what a killed run left) and
 * at its end (this run's own).
 */
import { sweepBundles } from "./bundled-process.js";

export default function setup(): () => void {
  sweepBundles();
  return () => sweepBundles(true);
}
