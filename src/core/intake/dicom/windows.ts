import type { DicomProvenance } from "../../contracts/clinical-case.js";

export type DicomWindow = DicomProvenance["window"];

/**
 * VOI windows used when a greyscale object carries none of its own (centre and width in the
 * units after the modality LUT, so Hounsfield units for CT). CT gets the soft-tissue window,
 * the one that shows most findings at once; lung and bone are listed for the docs and for
 * callers that ask for them. Other modalities have no fixed scale (MR intensities are arbitrary),
 * so they are windowed to the frame's own value range.
 */
export const CT_WINDOWS = {
  "soft tissue": { center: 40, width: 400 },
  lung: { center: -600, width: 1500 },
  bone: { center: 400, width: 1800 },
} as const;

/**
 * The extra CT windows a case asks for, by words of its question and notes: lung for the
 * lung fields and airways, bone for fractures and the skeleton. Each becomes another
 * rendering of the same frames; soft tissue (or the object's own window) always comes first.
 */
export function ctWindowsAskedFor(text: string): Array<"lung" | "bone"> {
  const out: Array<"lung" | "bone"> = [];
  if (/\b(lungs?|pulmonary|pneumo\w*|nodules?|emphysema|bronch\w*|airways?|pleura\w*|interstitial|ground[- ]glass)\b/i.test(text)) out.push("lung");
  if (/\b(bones?|fractur\w*|osseous|skelet\w*|vertebra\w*|spine|spinal|lytic|sclerotic|cortical|rib|ribs|skull)\b/i.test(text)) out.push("bone");
  return out;
}

/** The first WindowCenter/WindowWidth pair of the object, when it has a usable one. */
export function objectWindow(elements: Record<string, unknown>): DicomWindow | null {
  const center = firstNumber(elements.WindowCenter);
  const width = firstNumber(elements.WindowWidth);
  if (center === null || width === null || !(width >= 1)) return null;
  return { center, width, source: "object" };
}

/** The window a greyscale frame is rendered with, by the rule in docs/imaging.md. */
export function defaultWindow(modality: string | undefined): DicomWindow | null {
  if (modality === "CT") return { ...CT_WINDOWS["soft tissue"], source: "CT soft tissue (default)" };
  return null; // the frame's value range, computed by the renderer
}

function firstNumber(v: unknown): number | null {
  const first = Array.isArray(v) ? v[0] : v;
  const n = typeof first === "string" ? Number(first) : first;
  return typeof n === "number" && Number.isFinite(n) ? n : null;
}

/**
 * The frames sent of a multi-frame object: all when there are at most `max`, else `max`
 * evenly spaced ones including the first and the last (0-based indices, ascending).
 */
export function representativeFrames(frames: number, max: number): number[] {
  if (frames <= max) return Array.from({ length: frames }, (_, i) => i);
  if (max === 1) return [Math.floor((frames - 1) / 2)];
  return Array.from({ length: max }, (_, i) => Math.round((i * (frames - 1)) / (max - 1)));
}
