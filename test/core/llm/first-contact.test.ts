import { describe, expect, it } from "vitest";
import { firstContact } from "../../../src/core/llm/model-adaptation.js";

describe("the calls behind a model's first call", () => {
  it("wait for it, then go one per turn of the event loop, so each request can be written before the next is built", async () => {
    const endpoint = "http://first-contact.test/v1/chat/completions";
    const release = await firstContact(endpoint, "m", "any");
    expect(release).toBeTypeOf("function");

    // A ticker that counts turns of the event loop (one per check phase).
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);

    const wokenAt: number[] = [];
    const waiting = Array.from({ length: 5 }, () => firstContact(endpoint, "m", "any").then((r) => (wokenAt.push(turns), r)));
    // Let a few turns pass: nobody goes while the first call is out.
    const before = turns;
    await new Promise<void>((resolve) => {
      const wait = () => (turns >= before + 3 ? resolve() : setImmediate(wait));
      setImmediate(wait);
    });
    expect(wokenAt).toEqual([]);

    release!();
    // Every waiter may go (null: no release of its own), in the order they came, each in a later turn than the one before.
    expect(await Promise.all(waiting)).toEqual([null, null, null, null, null]);
    ticking = false;
    expect(wokenAt).toHaveLength(5);
    for (let i = 1; i < wokenAt.length; i++) expect(wokenAt[i]!).toBeGreaterThan(wokenAt[i - 1]!);
    // Calls after the first's answer do not wait at all.
    expect(await firstContact(endpoint, "m", "any")).toBeNull();
  });
});
