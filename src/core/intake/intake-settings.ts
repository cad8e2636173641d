import type { Config } from "../config.js";
import { configureDecodePool } from "./dicom/decode-pool.js";
import type { PrepareImageOptions } from "./images.js";

/** What every way a case comes in shares; each adds only who the caller is (allowPath, tenant, a PACS standing). */
export type IntakeSettings = Required<Pick<PrepareImageOptions, "maxBytes" | "maxPixels" | "maxDecodedBytes" | "maxDicomFrames" | "modelLongSide" | "dicomweb">>;

/**
 * The configuration's intake settings, the same for `serve`, `diagnose`, `chat`, `eval` and
 * `demo`: image size and decoded-bytes limits, DICOM frames, the model's long side and the
 * DICOMweb allow-list with its limits. It also sets the DICOM decoding threads' limits, so a
 * way in that takes its settings here cannot forget those either.
 */
export function intakeSettings(config: Config): IntakeSettings {
  configureDecodePool(config.images.decodePool);
  return {
    maxBytes: config.http.maxImageBytes,
    maxPixels: config.http.maxImagePixels,
    maxDecodedBytes: config.http.maxImageDecodedBytes,
    maxDicomFrames: config.images.dicomMaxFrames,
    modelLongSide: config.images.modelLongSide,
    dicomweb: config.images.dicomweb,
  };
}
