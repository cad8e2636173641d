import { describe, expect, it } from "vitest";
import { EventHub } from "../../../src/server/service/event-hub.js";
import { ProgressTracker } from "../../../src/server/service/progress.js";
import { pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import type { CaseEvent } from "../../../src/server/store/case-store.js";

const ev = (caseId: string, seq: number): CaseEvent => ({ caseId, seq, type: "rollout", data: {}, at: new Date(0).toISOString() });

describe("EventHub", () => {
  it("delivers to the case's subscribers only, drops throwing listeners, and ends streams", () => {
    const hub = new EventHub();
    const got: string[] = [];
    const ends: string[] = [];
    hub.subscribe("a", { onEvent: (e) => got.push(`a1:${e.seq}`), onEnd: (r) => ends.push(`a1:${r}`) });
    const off = hub.subscribe("a", { onEvent: (e) => got.push(`a2:${e.seq}`), onEnd: (r) => ends.push(`a2:${r}`) });
    hub.subscribe("a", { onEvent: () => { throw new Error("broken socket"); }, onEnd: () => undefined });
    hub.subscribe("b", { onEvent: (e) => got.push(`b:${e.seq}`), onEnd: (r) => ends.push(`b:${r}`) });
    hub.publish(ev("a", 1));
    expect(hub.listenerCount("a")).toBe(2);
    off();
    hub.publish(ev("a", 2));
    expect(got).toEqual(["a1:1", "a2:1", "a1:2"]);
    hub.end("a", "deleted");
    expect(hub.listenerCount("a")).toBe(0);
    hub.endAll("shutdown");
    expect(ends).toEqual(["a1:deleted", "b:shutdown"]);
  });
});

describe("ProgressTracker", () => {
  const config = scriptedConfig("http://127.0.0.1:9/v1", { MEDMMV_K: "3" });
  it("counts rollouts and evidence together, then scored paths, then done", () => {
    const p = new ProgressTracker(pipelineOptions(config), 1, false); // text + image doctor, no web search
    expect(p.current()).toEqual({ step: "rollouts-and-evidence", done: 0, total: 5 });
    p.observe("rollout", { index: 0 });
    p.observe("branch-failed", { branch: "rollout-1" });
    p.observe("evidence", { agent: "text-doctor" });
    expect(p.observe("status", { status: "running" })).toBeNull();
    expect(p.current()).toEqual({ step: "rollouts-and-evidence", done: 3, total: 5 });
    p.observe("rollout", { index: 2 });
    p.observe("branch-failed", { branch: "image-doctor" });
    expect(p.current()).toEqual({ step: "rollouts-and-evidence", done: 5, total: 5 });
    expect(p.observe("path-scored", { pathId: "path-1" })).toEqual({ step: "refine", done: 1, total: 2 });
    expect(p.observe("final", {})).toEqual({ step: "done", done: 1, total: 1 });
  });
});
