/**
 * The conformance suite moved to conformance/ (one file per store role); this file stays so
 * tests elsewhere that borrow its fixtures (e.g. makeNewCase) keep their import path.
 */
export { describeStoreConformance, expectCode, makeImage, makeNewCase, makeResult, type StoreHarness } from "./conformance/index.js";
