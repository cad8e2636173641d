import { writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { labelAnswer } from "../../../src/core/pathways/labeller.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { runConversationEval } from "../../../src/eval/conversation/run-conversation-eval.js";
import { QUESTION_ORDERS } from "../../../src/eval/conversation/types.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { fakeImages } from "../eval-fixtures.js";
import { conversationScenario } from "./conversation-scenario.js";
import { BANK_FILES, GENERATOR_FLOWS, KEY_CATEGORY, loadPhraseBank } from "./fixtures/drllava-text-repo/phrase-bank.js";

const bm = loadPathway("bone-marrow");
const banks = BANK_FILES.map(loadPhraseBank);

/**
 * Phrases of the bank a keyword labeller cannot label, with why (docs/evaluation.md lists the
 * same). Empty: every template labels as the category it was written for.
 */
const UNLABELLABLE: ReadonlyArray<{ text: string; why: string }> = [];

describe("Dr-LLaVA's phrase bank (text_repo.py)", () => {
  it("has every answer key of every bone-marrow step in each of its three lists", () => {
    for (const b of banks) expect(Object.keys(b.answers).sort(), `${b.path} ${b.split}`).toEqual(Object.keys(KEY_CATEGORY).sort());
    for (const s of bm.steps) for (const c of s.categories) expect(Object.values(KEY_CATEGORY).some((k) => k.step === s.id && k.category === c.id), `${s.id}/${c.id}`).toBe(true);
    // 16 lists of 10 (a_02's 9) + 16 of 5 + 16 of 15, aliases aside.
    expect(banks.map((b) => Object.entries(b.answers).filter(([k]) => k !== "a_03" && k !== "a_22").reduce((n, [, v]) => n + v.length, 0))).toEqual([159, 80, 240]);
  });

  it("labels every template as the category it was written for", () => {
    const wrong: string[] = [];
    let n = 0;
    for (const b of banks)
      for (const [key, list] of Object.entries(b.answers)) {
        const { step, category } = KEY_CATEGORY[key]!;
        for (const text of list) {
          n++;
          if (UNLABELLABLE.some((u) => u.text === text)) continue;
          const r = labelAnswer(text, bm.steps.find((s) => s.id === step)!);
          if (r.category !== category) wrong.push(`${b.split} ${key} (${step}/${category}) → ${r.category}${r.ties ? ` (${r.ties.join(" + ")})` : ""}: "${text}"`);
        }
      }
    // 479 templates, and the 59 of the lists that repeat another (a_03, a_22) once more under their own key.
    expect(n).toBe(538);
    expect(wrong, wrong.join("\n")).toEqual([]);
  });
});

const servers = useScriptedServers({ scenario: conversationScenario() });
const tmp = useTempDir("medmmv-phrase-bank-");

describe("conversations drawn from the phrase bank, answered with their gold answers", () => {
  // One record per list and source folder: 15 conversations in the generator's format, each
  // turn a different template (the k-th record takes template k of each list, wrapping).
  const records: Array<{ id: string; image: string; conversations: Array<{ from: string; value: string }>; diagnosis: string }> = [];
  const answers: Record<string, Record<string, string>> = {};
  banks.forEach((b, bi) =>
    Object.entries(GENERATOR_FLOWS).forEach(([diagnosis, keys], fi) => {
      const k = bi * 5 + fi;
      const id = `${b.split}-${diagnosis}`;
      const image = `${id}.jpeg`;
      const conversations = keys.flatMap((key, si) => {
        const list = b.answers[key]!;
        const step = bm.steps[si]!;
        const answer = list[(k + si) % list.length]!;
        (answers[image] ??= {})[step.id] = answer;
        return [
          { from: "human", value: si === 0 ? `<image>\n${step.question}` : step.question },
          { from: "gpt", value: answer },
        ];
      });
      records.push({ id, image, conversations, diagnosis });
    }),
  );

  let dir: string;
  beforeAll(async () => {
    dir = tmp();
    await fakeImages(path.join(dir, "images"), records.map((r) => r.image));
    await writeFile(path.join(dir, "bank.json"), JSON.stringify(records, null, 4));
  });

  it("score A_Q = A_C = A_D = 1 and H_cc = 0 in every order, with no gold answer unlabelled", async () => {
    servers.model.setScenario(conversationScenario((image, step) => answers[image]?.[step]));
    const out = path.join(dir, "gold");
    const { summary } = await runConversationEval(
      { dataset: "drllava", input: path.join(dir, "bank.json"), images: path.join(dir, "images"), method: "cot", orders: [...QUESTION_ORDERS], out, seed: 5 },
      { config: servers.config() },
    );
    for (const order of QUESTION_ORDERS)
      expect(summary.conversation?.[order], order).toMatchObject({ aQ: 1, aC: 1, aD: 1, hCC: 0, hCCReference: 0, conversations: 15, failed: 0, goldUnlabelled: 0 });
    expect(summary.dataset.warnings).toBe(0);
  });
});
