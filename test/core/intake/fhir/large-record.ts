/** One entry of a large synthetic record (no real person): a laboratory Observation with a long comment, as a searchset entry. */
export function syntheticLabEntry(i: number): Record<string, unknown> {
  return {
    fullUrl: `https://fhir.example.org/r4/Observation/lab-${i}`,
    resource: {
      resourceType: "Observation",
      id: `lab-${i}`,
      status: "final",
      category: [{ coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "laboratory" }] }],
      code: { coding: [{ system: "http://loinc.org", code: `${2000 + (i % 150)}-0`, display: `Synthetic analyte ${i % 150}` }] },
      subject: { reference: "Patient/synthetic-large" },
      effectiveDateTime: `20${String(10 + (i % 16)).padStart(2, "0")}-0${1 + (i % 9)}-1${i % 10}`,
      valueQuantity: { value: 3 + (i % 97) / 13, unit: "mmol/L", system: "http://unitsofmeasure.org", code: "mmol/L" },
      note: [{ text: `Synthetic specimen comment ${i}: ${"haemolysed sample, repeat advised; ".repeat(28)}` }],
    },
    search: { mode: "match" },
  };
}

/** The JSON of a synthetic searchset of about `targetBytes`. */
export function largeBundleText(targetBytes: number): string {
  const parts: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < targetBytes; i++) {
    const s = JSON.stringify(syntheticLabEntry(i));
    parts.push(s);
    bytes += s.length + 1;
  }
  return `{"resourceType":"Bundle","type":"searchset","entry":[${parts.join(",")}]}`;
}
