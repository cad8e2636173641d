// Uses app.inject: turn validation, ownership and 409s need no socket; the restart case reopens the data directory as a real server beside the CLI's child process.
import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_B, json, startTestServer, until } from "../http/http-harness.js";
import { startInjectServer, type InjectServer } from "../http/inject-harness.js";
import { AML_ANSWERS, AML_LABELS, MARROW_NOTES, questionOf, turnsScenario } from "./turns-scenario.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { medmmvCli } from "../../support/medmmv-cli.js";
import type { z } from "zod";
import type { TurnView } from "../../../src/server/http/routes/turns.js";

type TurnBody = z.infer<typeof TurnView> & { details: { conflict?: { steps: string[]; contradicted: string[]; issue: string } } };


let t: InjectServer;
beforeAll(async () => {
  t = await startInjectServer({ scenario: turnsScenario() });
});
afterAll(() => t.close());

const marrowCase = (notes = MARROW_NOTES) => ({ question: "What is the diagnosis of this bone-marrow patch?", notes, pathway: "bone-marrow" });

async function diagnose(body: unknown): Promise<string> {
  const res = await t.api("/diagnose", { method: "POST", json: body });
  expect(res.status).toBe(201);
  return (await json<{ caseId: string }>(res)).caseId;
}

async function ask(id: string, question: string, key?: string | null) {
  return t.api(`/cases/${id}/turns`, { method: "POST", json: { question }, ...(key !== undefined ? { key } : {}) });
}

describe("conversation turns over HTTP", () => {
  let caseId: string;
  beforeAll(async () => {
    caseId = await diagnose(marrowCase());
  });

  it("a consistent walk through the pathway labels each turn and never flags a conflict; a contradiction is flagged on its turn", async () => {
    const questions = Object.keys(AML_ANSWERS);
    const got: TurnBody[] = [];
    for (const q of questions) {
      const res = await ask(caseId, q);
      expect(res.status).toBe(201);
      got.push(await json<TurnBody>(res));
    }
    expect(got.map((x) => [x.turn, x.step, x.category, x.contextConflict])).toEqual(AML_LABELS);
    expect(got[5]!.details.conflict).toMatchObject({ contradicted: ["image-quality"], labels: { "image-quality": "high" } });
    // "low" fits a valid path on its own: the text says the step changed, as the labels do.
    expect(got[5]!.details.conflict!.issue).toBe('context-conflict: image-quality was answered high earlier and low later, which no valid path of pathway "bone-marrow" allows');
    expect(got[0]!.evidence.length).toBeGreaterThan(0);
    expect(got[0]!.details).toMatchObject({ hallucinationDetected: false, labelledBy: "keywords", keyword: "sufficient" });

    // The earlier turns reached the model's prompt, fenced as data.
    const prompts: string[] = [];
    const base = turnsScenario();
    t.openai.setScenario({ ...base, agents: { ...base.agents, "turn-answer": (req) => (prompts.push(req.text), (base.agents["turn-answer"] as (r: typeof req) => unknown)(req)) } });
    const seventh = await json<TurnBody>(await ask(caseId, "What is the diagnosis?"));
    t.openai.setScenario(turnsScenario());
    expect(seventh.turn).toBe(7);
    expect(prompts[0]).toMatch(/<<<MODEL_OUTPUT\nTurn 1\nQ: Is the image of sufficient quality for analysis\?\nA: Yes, the image quality is sufficient/);
    expect(questionOf({ text: prompts[0]! } as never)).toBe("What is the diagnosis?");

    const listed = await json<{ turns: TurnBody[] }>(await t.api(`/cases/${caseId}/turns`));
    expect(listed.turns.map((x) => x.turn)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(listed.turns[5]).toMatchObject({ ...got[5], at: expect.any(String) });
    // The audit view carries the turns, in order, with their labels.
    const view = await t.api(`/cases/${caseId}/view`);
    expect(view.status).toBe(200);
    const data = /<script id="medmmv-data" type="application\/json">([\s\S]*?)<\/script>/.exec(await view.text());
    const embedded = (JSON.parse(data![1]!) as { turns: TurnBody[] }).turns;
    expect(embedded.map((x) => [x.turn, x.step, x.category, x.contextConflict])).toEqual(listed.turns.map((x) => [x.turn, x.step, x.category, x.contextConflict]));
    // Questions and answers are case content: never in the logs.
    expect(t.logs.text()).not.toContain("Looking again, is the image quality acceptable");
    expect(t.logs.text()).not.toContain("Myeloblasts are proliferating");
  });

  it("a step given by the client wins; an unknown step, an empty question, extra fields and bad JSON are 400", async () => {
    const res = await t.api(`/cases/${caseId}/turns`, { method: "POST", json: { question: "What is the diagnosis?", step: "diagnosis" } });
    expect(res.status).toBe(201);
    expect((await json<TurnBody>(res)).step).toBe("diagnosis");
    const bad = async (body: unknown, pattern: RegExp) => {
      const r = await t.api(`/cases/${caseId}/turns`, { method: "POST", json: body });
      expect(r.status).toBe(400);
      expect((await json<{ message: string }>(r)).message).toMatch(pattern);
    };
    await bad({ question: "Which cell type is proliferating?", step: "cell-count" }, /step "cell-count" is not a step of pathway "bone-marrow" \(steps: image-quality, cell-quality/);
    await bad({ question: "   " }, /question must not be empty/);
    await bad({ question: "x", colour: "red" }, /colour/);
    await bad({}, /question/);
    const notJson = await t.api(`/cases/${caseId}/turns`, { method: "POST", body: "{", headers: { "content-type": "application/json" } });
    expect(notJson.status).toBe(400);
  });

  it("the API takes the pathway object itself; a malformed one is a 400 naming the bad entry", async () => {
    const custom = { ...loadPathway("bone-marrow"), id: "marrow-custom", title: "Custom marrow pathway" };
    const id = await diagnose({ ...marrowCase(), pathway: custom });
    const stored = await json<{ case: { pathway: { id: string } } }>(await t.api(`/cases/${id}`));
    expect(stored.case.pathway.id).toBe("marrow-custom");
    const turn = await json<TurnBody>(await ask(id, "What is the diagnosis?"));
    expect(turn).toMatchObject({ step: "diagnosis", category: "aml", contextConflict: false });

    const bad = { ...custom, paths: [{ id: "x", outcome: "x", sequence: { diagnosis: "flu" } }] };
    const res = await t.api("/diagnose", { method: "POST", json: { ...marrowCase(), pathway: bad } });
    expect(res.status).toBe(400);
    expect((await json<{ message: string }>(res)).message).toContain('path "x" gives step "diagnosis" the category "flu"');
    const unknown = await t.api("/diagnose", { method: "POST", json: { ...marrowCase(), pathway: "lung" } });
    expect(unknown.status).toBe(400);
    expect((await json<{ message: string }>(unknown)).message).toMatch(/unknown pathway "lung"; known pathways: bone-marrow/);
  });

  it("questions sent at once on one case are answered one after the other, each seeing the turns before it", async () => {
    const id = await diagnose(marrowCase());
    const [a, b, c] = await Promise.all(["What is the diagnosis?", "Which cell type is proliferating?", "Are there abnormalities in the cells?"].map((q) => ask(id, q)));
    expect([a!.status, b!.status, c!.status]).toEqual([201, 201, 201]);
    const turns = await Promise.all([a!, b!, c!].map((r) => json<TurnBody>(r)));
    expect(turns.map((x) => x.turn).sort()).toEqual([1, 2, 3]);
    const listed = await json<{ turns: TurnBody[] }>(await t.api(`/cases/${id}/turns`));
    expect(listed.turns.map((x) => x.turn)).toEqual([1, 2, 3]);
  });

  it("401 without a key; another key's case and a missing case are 404 for both routes", async () => {
    expect((await t.api(`/cases/${caseId}/turns`, { key: null })).status).toBe(401);
    expect((await ask(caseId, "What is the diagnosis?", null)).status).toBe(401);
    expect((await ask(caseId, "What is the diagnosis?", "not-a-key-of-this-server")).status).toBe(401);
    expect((await ask(caseId, "What is the diagnosis?", KEY_B)).status).toBe(404);
    expect((await t.api(`/cases/${caseId}/turns`, { key: KEY_B })).status).toBe(404);
    expect((await ask("case-00000000-0000-0000-0000-000000000000", "What is the diagnosis?")).status).toBe(404);
    expect((await t.api("/cases/case-00000000-0000-0000-0000-000000000000/turns")).status).toBe(404);
  });

  it("409 on a case that is still running, and on one that failed", async () => {
    t.openai.addFault({ kind: "hang", agent: "rollout", textIncludes: "HANG-MARKER" });
    const accepted = await t.api("/diagnose", { method: "POST", json: marrowCase(`${MARROW_NOTES} HANG-MARKER`), headers: { prefer: "respond-async" } });
    expect(accepted.status).toBe(202);
    const running = (await json<{ caseId: string }>(accepted)).caseId;
    await until(async () => (["queued", "running"].includes((await json<{ status: string }>(await t.api(`/cases/${running}`))).status) ? true : undefined), 5_000, "case accepted");
    const r409 = await ask(running, "What is the diagnosis?");
    expect(r409.status).toBe(409);
    expect((await json<{ message: string }>(r409)).message).toMatch(/is still (queued|running); ask once it has finished/);
    expect((await t.api(`/cases/${running}`, { method: "DELETE" })).status).toBe(204);
    t.openai.clearFaults();

    t.openai.addFault({ kind: "status", status: 400, agent: "rollout", textIncludes: "FAIL-MARKER" });
    const failedRes = await t.api("/diagnose", { method: "POST", json: marrowCase(`${MARROW_NOTES} FAIL-MARKER`) });
    const failed = (await json<{ caseId: string; status: string }>(failedRes));
    t.openai.clearFaults();
    expect(failed.status).toBe("failed");
    const f409 = await ask(failed.caseId, "What is the diagnosis?");
    expect(f409.status).toBe(409);
    expect((await json<{ message: string }>(f409)).message).toMatch(/failed, so there is no result to talk about/);
  });

  it("stored turns survive a restart on the same data directory, and go when the case is purged", async () => {
    const id = await diagnose(marrowCase());
    await ask(id, "Is the image of sufficient quality for analysis?");
    const before = await json<{ turns: TurnBody[] }>(await t.api(`/cases/${id}/turns`));
    const dataDir = t.dataDir;
    await t.server.close();
    const again = await startTestServer({ scenario: turnsScenario(), dataDir });
    try {
      const after = await json<{ turns: TurnBody[] }>(await again.api(`/cases/${id}/turns`));
      expect(after.turns).toEqual(before.turns);
      expect(after.turns).toHaveLength(1);
      const second = await json<TurnBody>(await again.api(`/cases/${id}/turns`, { method: "POST", json: { question: "Is the region suitable for cell analysis?" } }));
      expect(second).toMatchObject({ turn: 2, category: "adequate", contextConflict: false });
      // The offline report of a stored case carries its turns too.
      const html = path.join(dataDir, "report.html");
      const rep = await medmmvCli(["report", id, "-o", html], { MEDMMV_DATA_DIR: dataDir });
      expect(rep.code).toBe(0);
      const data = /<script id="medmmv-data" type="application\/json">([\s\S]*?)<\/script>/.exec(await readFile(html, "utf8"));
      expect((JSON.parse(data![1]!) as { turns: TurnBody[] }).turns.map((x) => [x.turn, x.category])).toEqual([
        [1, "high"],
        [2, "adequate"],
      ]);
      expect((await again.api(`/cases/${id}`, { method: "DELETE" })).status).toBe(204);
      expect((await again.api(`/cases/${id}/turns`)).status).toBe(404);
      expect(await again.server.store.listTurns(id)).toEqual([]);
    } finally {
      await again.close();
      // The first server is closed already: release what its harness would have.
      await t.openai.close();
      await rm(dataDir, { recursive: true, force: true });
      t = { ...t, close: async () => undefined };
    }
  });
});
