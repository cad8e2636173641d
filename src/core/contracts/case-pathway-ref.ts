import { z } from "zod";
import { Pathway } from "./pathway.js";

/** `ClinicalCase.pathway`: the id of a pathway in pathways/, or (via the API) the pathway itself. */
export const CasePathwayRef = z
  .union([z.string().min(1).max(64).describe("Id of a pathway in the registry (bundled in pathways/ or in MEDMMV_PATHWAYS_DIR), e.g. \"bone-marrow\"; never a file path"), Pathway])
  .describe("The clinical pathway the case's reasoning must stay on (docs/architecture.md#clinical-pathways-and-conversations); each refined path is checked against its valid paths");
export type CasePathwayRef = z.infer<typeof CasePathwayRef>;
