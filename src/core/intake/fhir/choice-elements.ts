/**
 * R4 choice elements (`value[x]`, `effective[x]`, …) hold one value: a resource that gives
 * one twice (mCODE's HER2 ratio as `valueQuantity` and `valueRatio`, an ER status as
 * `valueCodeableConcept` and `valueString` "Positive") says two things, and reading either
 * silently would pick one for the sender. That element is left out, and named.
 */

type Json = Record<string, unknown>;

/** The choice elements of the resources read, by their name without `[x]`. */
const CHOICES = ["value", "effective", "onset", "abatement", "occurrence", "performed", "medication", "deceased", "multipleBirth", "born", "age"];
const TYPED = new RegExp(`^(${CHOICES.join("|")})([A-Z][A-Za-z]+)$`);

/** A choice element given more than once: where, and the keys that give it. */
export interface ChoiceTwice {
  path: string;
  keys: string[];
}

function twiceIn(o: Json, at: string, out: ChoiceTwice[]): Json {
  const byChoice = new Map<string, string[]>();
  for (const k of Object.keys(o)) {
    const m = TYPED.exec(k);
    if (m) byChoice.set(m[1]!, [...(byChoice.get(m[1]!) ?? []), k]);
  }
  let copy: Json | null = null;
  for (const [choice, keys] of byChoice) {
    if (keys.length < 2) continue;
    copy ??= { ...o };
    for (const k of keys) delete copy[k];
    out.push({ path: `${at}${at ? "." : ""}${choice}[x]`, keys });
  }
  return copy ?? o;
}

/**
 * The resource with every choice element given twice left out (at its top level and in its
 * `component`s), and the elements so left out. The resource is returned as it was when none is.
 */
export function withoutChoicesGivenTwice(resource: Json): { resource: Json; twice: ChoiceTwice[] } {
  const twice: ChoiceTwice[] = [];
  let r = twiceIn(resource, "", twice);
  if (Array.isArray(r.component)) {
    const comps = (r.component as unknown[]).map((c, i) => (c && typeof c === "object" && !Array.isArray(c) ? twiceIn(c as Json, `component[${i}]`, twice) : c));
    if (comps.some((c, i) => c !== (r.component as unknown[])[i])) r = { ...r, component: comps };
  }
  return { resource: r, twice };
}
