// A whole-slide instance's WADO-RS metadata (DICOM JSON) reduced, in a decode-pool thread, to
// the attributes the pyramid reader reads (wsi-levels.ts): the JSON is parsed there, under the
// thread's heap limit and time limit, and only this summary crosses back to the main thread.
// Plain JavaScript, as the worker is.

/** Attributes kept as they are (their first 16 values): image type, sizes, frames, pixel format, organisation, frame offset. */
const KEEP = ["00080008", "00480006", "00480007", "00280011", "00280010", "00280008", "00280002", "00280100", "00280004", "00209311", "00209228"];
/** Per-frame positions kept (as many as a level may declare frames). */
const MAX_POSITIONS = 250000;

function first(v) {
  const x = v?.Value?.[0];
  return typeof x === "object" && x !== null ? x : undefined;
}

function scalar(v) {
  const x = v?.Value?.[0];
  return typeof x === "string" ? x.slice(0, 200) : typeof x === "number" && Number.isFinite(x) ? x : undefined;
}

const one = (x) => (x === undefined ? undefined : { Value: [x] });

/** The summary of `text` (a DICOM JSON array of one dataset), or an error naming what is wrong. */
export function slimWsiMetadata(text) {
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { error: "the server's metadata answer is not JSON" };
  }
  if (!Array.isArray(parsed)) return { error: "the server's metadata answer is not a JSON array" };
  if (parsed.length !== 1 || typeof parsed[0] !== "object" || parsed[0] === null) return { error: `the metadata answer for an instance holds ${parsed.length} datasets, not one` };
  const m = parsed[0];
  const out = {};
  for (const tag of KEEP) {
    const values = m[tag]?.Value;
    if (Array.isArray(values)) out[tag] = { Value: values.slice(0, 16).filter((x) => typeof x === "string" || typeof x === "number").map((x) => (typeof x === "string" ? x.slice(0, 200) : x)) };
  }
  const spacing = first(first(m["52009229"])?.["00289110"])?.["00280030"]?.Value;
  if (Array.isArray(spacing)) out["52009229"] = { Value: [{ "00289110": { Value: [{ "00280030": { Value: spacing.slice(0, 2).map(Number) } }] } }] };
  const perFrame = m["52009230"]?.Value;
  if (Array.isArray(perFrame)) {
    out["52009230"] = {
      Value: perFrame.slice(0, MAX_POSITIONS).map((g) => {
        const p = first(g?.["0048021A"]);
        const c = scalar(p?.["0048021E"]);
        const r = scalar(p?.["0048021F"]);
        return c !== undefined && r !== undefined ? { "0048021A": { Value: [{ "0048021E": one(Number(c)), "0048021F": one(Number(r)) }] } } : {};
      }),
    };
  }
  const paths = m["00480105"]?.Value;
  if (Array.isArray(paths)) {
    out["00480105"] = {
      Value: paths.slice(0, 8).filter((p) => typeof p === "object" && p !== null).map((p) => ({
        ...(p["00282000"] !== undefined ? { "00282000": { vr: "OB" } } : {}),
        ...(scalar(p["00480106"]) !== undefined ? { "00480106": one(scalar(p["00480106"])) } : {}),
        ...(scalar(p["00480107"]) !== undefined ? { "00480107": one(scalar(p["00480107"])) } : {}),
        ...(scalar(first(p["00220016"])?.["00080104"]) !== undefined ? { "00220016": { Value: [{ "00080104": one(scalar(first(p["00220016"])["00080104"])) }] } } : {}),
      })),
    };
  }
  return { meta: out };
}
