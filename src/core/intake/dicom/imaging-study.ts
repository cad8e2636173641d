import type { ImageInput } from "../../contracts/clinical-case.js";
import { isAllowedDicomwebServer } from "./dicomweb.js";

/** The parts of a bundle entry this reads (src/core/intake/fhir/bundle-index.ts's IndexedEntry). */
interface Entry {
  at: string;
  type: string;
  name: string;
  resource: Record<string, unknown>;
}

const UID = /^[0-9]+(\.[0-9]+)*$/;

function studyUid(study: Record<string, unknown>): string | undefined {
  const ids = Array.isArray(study.identifier) ? (study.identifier as Array<Record<string, unknown>>) : [];
  for (const id of ids) {
    const value = typeof id.value === "string" ? id.value.replace(/^urn:oid:/, "") : "";
    if (id.system === "urn:dicom:uid" && UID.test(value)) return value;
  }
  return undefined;
}

/** The WADO-RS base URL of the first Endpoint the study (or one of its series) points to. */
function wadoRsAddress(study: Record<string, unknown>, resolve: (reference: string) => Entry | null | undefined): string | undefined {
  const refs: unknown[] = [...(Array.isArray(study.endpoint) ? study.endpoint : [])];
  for (const s of Array.isArray(study.series) ? (study.series as Array<Record<string, unknown>>) : []) refs.push(...(Array.isArray(s.endpoint) ? s.endpoint : []));
  for (const ref of refs) {
    const reference = (ref as { reference?: unknown } | null)?.reference;
    if (typeof reference !== "string") continue;
    const endpoint = resolve(reference)?.resource;
    const type = (endpoint?.connectionType as { code?: unknown } | undefined)?.code;
    if (endpoint?.resourceType === "Endpoint" && type === "dicom-wado-rs" && typeof endpoint.address === "string") return endpoint.address;
  }
  return undefined;
}

/**
 * The images a bundle's ImagingStudy resources stand for: each study with a DICOMweb
 * (`dicom-wado-rs`) Endpoint and a study UID becomes one `dicomweb` image of the case, its
 * series chosen by the rule in docs/imaging.md. Whether the server may be contacted is decided
 * at intake (MEDMMV_DICOMWEB_SERVERS), not here. Called by src/core/intake/fhir/bundle-to-case.ts.
 */
export function imagingStudyImages(entries: readonly Entry[], resolve: (reference: string) => Entry | null | undefined): Array<{ image: ImageInput; at: string }> {
  const out: Array<{ image: ImageInput; at: string }> = [];
  for (const e of entries) {
    if (e.type !== "ImagingStudy") continue;
    const study = studyUid(e.resource);
    const server = wadoRsAddress(e.resource, resolve);
    if (!study || !server || !/^https?:\/\//.test(server)) continue;
    const modality = (e.resource.modality as Array<{ code?: unknown }> | undefined)?.map((m) => m.code).filter((c): c is string => typeof c === "string" && /^[A-Z]{1,16}$/.test(c));
    out.push({
      image: { id: e.name.replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 128), dicomweb: { server, study }, ...(modality?.length ? { caption: `Imaging study (${modality.join(", ")})` } : {}) },
      at: e.at,
    });
  }
  return out;
}

/**
 * The case with the EHR's token (a CDS hook's fhirAuthorization) on every DICOMweb reference
 * that has none and whose server is allow-listed: the EHR's authority reaches the PACS its
 * own ImagingStudy names, and never a server off the list (whose references keep no token,
 * and are refused before any request).
 */
export function withEhrPacsToken<C extends { images?: ImageInput[] }>(c: C, accessToken: string | undefined, allowList: readonly string[]): C {
  if (!accessToken || !c.images?.some((i) => i.dicomweb && !i.dicomweb.accessToken)) return c;
  return {
    ...c,
    images: c.images.map((i) => (i.dicomweb && !i.dicomweb.accessToken && isAllowedDicomwebServer(i.dicomweb.server, allowList) ? { ...i, dicomweb: { ...i.dicomweb, accessToken } } : i)),
  };
}
