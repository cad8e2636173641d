/** Poll until `check` returns a value (not undefined), or fail after `ms`. */
export async function until<T>(check: () => Promise<T | undefined> | T | undefined, ms = 10_000, what = "condition"): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
