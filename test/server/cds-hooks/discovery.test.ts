import { describe, expect, it } from "vitest";
import { discoveryDocument } from "../../../src/server/cds-hooks/discovery.js";

/**
 * CDS Hooks 2.0.1 §Prefetch query restrictions, written from the specification: an instance
 * read, or a type-level search using a patient reference, token equality, `_count` and `_sort`.
 * `_include` and other modifiers are outside it.
 */
const READ = /^[A-Z][A-Za-z]+\/\{\{context\.patientId\}\}$/;
const SEARCH_PARAM = /^(patient=\{\{context\.patientId\}\}|[a-z][a-z-]*=[A-Za-z0-9.-]+(,[A-Za-z0-9.-]+)*|_count=\d+|_sort=-?[a-z-]+)$/;

describe("discovery", () => {
  it("every prefetch template stays inside the 2.0.1 prefetch query restrictions", () => {
    for (const [key, template] of Object.entries(discoveryDocument().services[0]!.prefetch)) {
      if (READ.test(template)) continue;
      const [type, query] = template.split("?");
      expect(type, key).toMatch(/^[A-Z][A-Za-z]+$/);
      for (const param of query!.split("&")) expect(param, `${key}: ${param}`).toMatch(SEARCH_PARAM);
    }
  });
});
