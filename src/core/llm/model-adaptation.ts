import type { ModelProfile, StructuredMethod, TokenParameter } from "./model-profile.js";

/**
 * What a model server revealed at run time that its profile did not say: a temperature it
 * rejects, the other name of the output budget, a structured-output mode it ignores or
 * rejects, the most images it takes per request. Learned once per endpoint and model for
 * the rest of the process (every case and client after it starts from what was learned),
 * announced once as a process warning, and named in each result's provenance.
 */
export interface Adaptation {
  temperature?: false;
  tokenParameter?: TokenParameter;
  /** The mode now in use and why the ones before it were left. */
  structuredOutput?: { mode: StructuredMethod; reasons: string[] };
  imagesPerRequest?: number;
  /** The most prompt tokens the server kept of a prompt it cut without refusing it (context-truncation.ts). */
  keptPromptTokens?: number;
}

const learned = new Map<string, Adaptation>();

function keyOf(endpoint: string, model: string): string {
  return `${endpoint}|${model}`;
}

/** The profile with what the server has shown applied. */
export function adapted(profile: ModelProfile, endpoint: string): ModelProfile {
  return withAdaptation(profile, learned.get(keyOf(endpoint, profile.model)));
}

/** The profile with one adaptation (adaptationOf's) applied; the profile itself where there is none. */
export function withAdaptation(profile: ModelProfile, a: Adaptation | undefined): ModelProfile {
  if (!a) return profile;
  const structuredOutput = a.structuredOutput ? profile.structuredOutput.slice(Math.max(0, profile.structuredOutput.indexOf(a.structuredOutput.mode))) : profile.structuredOutput;
  return {
    ...profile,
    temperature: a.temperature ?? profile.temperature,
    tokenParameter: a.tokenParameter ?? profile.tokenParameter,
    structuredOutput: structuredOutput.length ? structuredOutput : profile.structuredOutput,
    imagesPerRequest: a.imagesPerRequest !== undefined ? Math.min(a.imagesPerRequest, profile.imagesPerRequest ?? Infinity) : profile.imagesPerRequest,
  };
}

/**
 * A server that cut a prompt to `kept` tokens and answered 200 (Ollama): recorded for the
 * process, so that later prompts it would cut the same way fail before they are sent instead of
 * being answered without the whole case.
 */
export function learnTruncation(endpoint: string, model: string, kept: number): void {
  const key = keyOf(endpoint, model);
  const a = { ...learned.get(key) };
  if (a.keptPromptTokens !== undefined && a.keptPromptTokens <= kept) return;
  a.keptPromptTokens = kept;
  learned.set(key, a);
  process.emitWarning(`model ${model} at ${endpoint} cut a prompt to ${kept} tokens without refusing it: its context window is too small for medmmv's prompts`, { code: "MEDMMV_MODEL_ADAPTED" });
}

/** What was learned about a model at an endpoint, for provenance; undefined: nothing. */
export function adaptationOf(endpoint: string, model: string): Adaptation | undefined {
  return learned.get(keyOf(endpoint, model));
}

/**
 * Records one lesson. Returns false when it teaches nothing new (another call learned it
 * first, or there is nothing left to fall back to), so the caller does not loop.
 */
export function learn(endpoint: string, profile: ModelProfile, lesson: Lesson): boolean {
  const key = keyOf(endpoint, profile.model);
  const a = { ...learned.get(key) };
  const current = adapted(profile, endpoint);
  let note: string;
  switch (lesson.kind) {
    case "noTemperature":
      if (!current.temperature) return false;
      a.temperature = false;
      note = "takes only its default temperature: none is sent, and rollout diversity comes from the model's own sampling";
      break;
    case "tokenParameter":
      if (current.tokenParameter === lesson.name) return false;
      a.tokenParameter = lesson.name;
      note = `takes ${lesson.name} for the output budget`;
      break;
    case "structuredOutput": {
      // Only a failure of the mode in use moves on: a late reply of an earlier mode teaches nothing.
      if (current.structuredOutput[0] !== lesson.failed) return false;
      const next = current.structuredOutput[1];
      if (!next) return false;
      a.structuredOutput = { mode: next, reasons: [...(a.structuredOutput?.reasons ?? []), `${lesson.failed}: ${lesson.why}`] };
      note = `structured output switched from ${lesson.failed} to ${next} (${lesson.why})`;
      break;
    }
    case "imageLimit":
      if (current.imagesPerRequest !== null && current.imagesPerRequest <= lesson.limit) return false;
      a.imagesPerRequest = lesson.limit;
      note = `takes at most ${lesson.limit} image(s) per request: more are composed into that many pictures`;
      break;
  }
  learned.set(key, a);
  process.emitWarning(`model ${profile.model} at ${endpoint} ${note}`, { code: "MEDMMV_MODEL_ADAPTED" });
  return true;
}

export type Lesson =
  | { kind: "noTemperature" }
  | { kind: "tokenParameter"; name: TokenParameter }
  | { kind: "structuredOutput"; failed: StructuredMethod; why: string }
  | { kind: "imageLimit"; limit: number };

/**
 * The origins of the providers whose own API the catalog describes (model-catalog.ts reads the
 * first-party providers' entries): a model of the catalog served there has its rules known
 * before any reply, so its first call need not go alone — on OpenAI's API the catalog's rules
 * for gpt-5 are OpenAI's own, and the wait would cost every CLI run one whole model call (many
 * seconds for a reasoning model). A catalog name served anywhere else (an Azure deployment, vLLM,
 * a compatibility layer such as Anthropic's, which ignores response_format) may differ, and its
 * first call still goes alone.
 */
const CATALOG_ORIGINS: Readonly<Record<string, string>> = { openai: "https://api.openai.com" };

/** Whether `endpoint` is the catalog's own provider for `profile`'s model (see CATALOG_ORIGINS). */
export function rulesKnownBeforeFirstReply(profile: Pick<ModelProfile, "catalog">, endpoint: string): boolean {
  const origin = profile.catalog === null ? undefined : CATALOG_ORIGINS[profile.catalog];
  if (origin === undefined || !URL.canParse(endpoint)) return false;
  return new URL(endpoint).origin === origin;
}

const contacted = new Set<string>();
/** Per key whose pioneer is out: the calls waiting for it, woken in the order they came. */
const contacting = new Map<string, Array<() => void>>();

/**
 * How long the calls behind a pioneer wait for it. A server that answers within this teaches
 * its rules before the opening burst; one whose first call is slow, or hangs until the
 * per-attempt timeout, does not hold every other call of the process that long: after it
 * they go, and learn from their own replies as the pioneer would have.
 */
export const FIRST_CONTACT_WAIT_MS = 5_000;

/**
 * Wakes the waiting calls one per turn of the event loop. Woken together, every one of them
 * builds its request (LangChain, the SDK, the transport: a few ms of CPU each) before the first
 * is written, and the whole burst reaches the server after the last is built (15 calls of a CoT
 * eval: 50–90 ms here); one per turn, each request is on the wire before the next is built.
 */
function wakeInTurn(waiters: Array<() => void>): void {
  const next = () => {
    waiters.shift()?.();
    if (waiters.length > 0) setImmediate(next);
  };
  next();
}

/**
 * The first call of a kind to a model (any call; the first with several images) goes alone:
 * calls made meanwhile wait for its answer, so that a rule its server reveals (a temperature
 * refused, a mode ignored, an image limit) is learned once instead of being broken by every
 * call of the case's opening burst. Once per endpoint, model and kind for the process, and for
 * at most FIRST_CONTACT_WAIT_MS.
 * Returns the release of the pioneer (call it when the answer has been learned from), or
 * null when the call may simply go.
 */
export async function firstContact(endpoint: string, model: string, kind: "any" | "images"): Promise<(() => void) | null> {
  const key = `${keyOf(endpoint, model)}|${kind}`;
  for (;;) {
    if (contacted.has(key)) return null;
    const waiters = contacting.get(key);
    if (!waiters) {
      const queue: Array<() => void> = [];
      contacting.set(key, queue);
      return () => {
        if (contacting.get(key) !== queue) return;
        contacted.add(key);
        contacting.delete(key);
        wakeInTurn(queue);
      };
    }
    const answered = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), FIRST_CONTACT_WAIT_MS);
      timer.unref();
      waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (!answered) {
      // The pioneer is slow: nobody waits for it any longer.
      contacted.add(key);
      return null;
    }
  }
}

/** Rules confirmed or refuted by a content-free probe, per endpoint, model and question (the answer, once known). */
const confirmed = new Map<string, Promise<boolean>>();

/**
 * The answer to `ask` for `key`, asked once for the process (calls asking meanwhile share it).
 * A probe that fails (an outage, a timeout) teaches nothing and is asked again next time.
 */
export function confirmRule(key: string, ask: () => Promise<boolean>): Promise<boolean> {
  let answer = confirmed.get(key);
  if (!answer) {
    answer = ask().catch(() => {
      confirmed.delete(key);
      return false;
    });
    confirmed.set(key, answer);
  }
  return answer;
}

/** Forget everything learned (tests that start a fresh server on a reused port). */
export function forgetAdaptations(): void {
  learned.clear();
  contacted.clear();
  confirmed.clear();
}
