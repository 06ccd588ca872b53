/**
 * Waits until `check` holds, polling, within a generous limit (15 s by
 * default): for tests of things that happen in the background (a watcher, a
 * poll). It never asserts how fast they happen: a slow, shared machine only
 * makes the test wait longer. Throws, naming `what`, when the limit passes.
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what = "the condition",
  limitMs = 15_000,
): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`${what}: still not so after ${limitMs / 1000} s`);
    await Bun.sleep(10);
  }
}
