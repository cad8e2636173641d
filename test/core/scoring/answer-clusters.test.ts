import { describe, expect, it } from "vitest";
import { ClusterIndex, buildClusters, expandedWording, groupsForJudge, normalisedWording, readJudgeGroups, ruleGroups } from "../../../src/core/scoring/answer-clusters.js";
import { rankDifferential } from "../../../src/core/scoring/differential.js";

const text = (t: string) => ({ option: null, text: t });

describe("answer clusters without a model", () => {
  it("reads punctuation as a word break and drops case, diacritics and articles", () => {
    expect(normalisedWording("Acute ST-elevation MI.")).toBe("acute st elevation mi");
    expect(normalisedWording("The Ménière disease")).toBe("meniere disease");
    expect(expandedWording("Inferior STEMI")).toBe("inferior st elevation myocardial infarction");
    expect(expandedWording("COPD exacerbation")).toBe(expandedWording("chronic obstructive pulmonary disease exacerbation"));
  });

  it("groups by the strongest rule needed and leaves meaning to the judge", () => {
    const answers = [text("Inferior MI"), text("inferior MI"), text("Inferior myocardial infarction"), text("Pericarditis"), null, text("pericarditis!")];
    const groups = ruleGroups(answers);
    expect(groups.map((g) => [g.rollouts, g.rule])).toEqual([
      [[0, 1, 2], "abbreviation"],
      [[3, 5], "normalised"],
    ]);
    expect(groupsForJudge(groups).map((g) => g.wording)).toEqual(["Inferior MI", "Pericarditis"]);
    // The judge keeps them apart: two clusters; it merges them: one "judge" cluster.
    expect(buildClusters(answers, groups, [0, 1])).toHaveLength(2);
    const merged = buildClusters(answers, groups, [0, 0]);
    expect(merged).toEqual([{ key: "inferior mi", canonical: "Inferior MI", rollouts: [0, 1, 2, 3, 5], rule: "judge", wordings: ["Inferior MI", "inferior MI", "Inferior myocardial infarction", "Pericarditis", "pericarditis!"] }]);
  });

  it("compares option letters, never asking the judge", () => {
    const answers = [{ option: "B", text: "x" }, { option: "B", text: "y" }, { option: "A", text: "z" }];
    const groups = ruleGroups(answers);
    expect(groupsForJudge(groups)).toEqual([]);
    expect(buildClusters(answers, groups, null).map((c) => [c.key, c.rule, c.rollouts])).toEqual([
      ["B", "option", [0, 1]],
      ["A", "option", [2]],
    ]);
  });

  it("places a repaired answer in the cluster its rules match, and otherwise on its own", () => {
    const answers = [text("Inferior STEMI"), text("Acute pericarditis")];
    const index = new ClusterIndex(buildClusters(answers, ruleGroups(answers), null), answers);
    expect(index.keyOf(text("inferior ST elevation myocardial infarction"))).toBe("inferior stemi");
    expect(index.keyOf(text("Aortic dissection"))).toBe("aortic dissection");
    expect(index.rolloutKeys(3)).toEqual(["inferior stemi", "acute pericarditis", null]);
  });

  it("holds the judge to its contract: groups partition 1..n", () => {
    expect(readJudgeGroups([[1, 3], [2]], 3)).toEqual({ judged: [0, 1, 0] });
    expect(readJudgeGroups([[1, 2]], 3)).toMatchObject({ outOfContract: "answer 3 is in no group" });
    expect(readJudgeGroups([[1, 2], [2, 3]], 3)).toMatchObject({ outOfContract: "answer 2 is in two groups" });
    expect(readJudgeGroups([[1, 4]], 3)).toMatchObject({ outOfContract: expect.stringContaining("not an answer number") });
    expect(readJudgeGroups("all", 3)).toMatchObject({ outOfContract: expect.any(String) });
  });
});

describe("the ranked differential", () => {
  it("puts the selected cluster first, then by rollouts and best CU, with a repaired answer no rollout gave", () => {
    const answers = [text("Pericarditis"), text("STEMI"), text("STEMI"), text("PE")];
    const clusters = buildClusters(answers, ruleGroups(answers), null);
    const diff = rankDifferential(
      clusters,
      [
        { cluster: "pericarditis", cu: 0.4, answer: text("Pericarditis") },
        { cluster: "stemi", cu: 0.7, answer: text("STEMI") },
        { cluster: "aortic dissection", cu: 0.9, answer: text("Aortic dissection") },
        { cluster: "pe", cu: 0.5, answer: text("PE") },
      ],
      "aortic dissection",
      (l) => l,
    );
    expect(diff.map((d) => [d.rank, d.answer.text, d.rollouts, d.of, d.bestCu, d.candidateIndex])).toEqual([
      [1, "Aortic dissection", 0, 4, 0.9, 2],
      [2, "STEMI", 2, 4, 0.7, 1],
      [3, "PE", 1, 4, 0.5, 3],
      [4, "Pericarditis", 1, 4, 0.4, 0],
    ]);
  });
});
