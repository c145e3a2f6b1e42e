/**
 * Polls `fn` until `check` accepts its value or the deadline passes, and returns the last value
 * (the caller asserts on it: the outcome is tested, never the time). For changes that reach another
 * place asynchronously: NOTIFY between API instances, a workflow's write, the mirror's lag.
 */
export async function eventually<T>(fn: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 5_000, intervalMs = 50): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (check(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
