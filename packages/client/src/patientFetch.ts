/**
 * Waiting out a busy service (issue 29 item 8): a fetch that, when the answer is a retryable 429 or
 * 503 saying when to come back, waits and sends the same request again, for at most `maxWaitMs` in
 * all, and says so in one line per wait (`onWait`). When the answer says how long (Retry-After in
 * seconds or as an HTTP date; for a 429, also X-RateLimit-Reset, a Unix time in seconds, SPEC 8) and
 * that fits in what is left of the bound, it waits; otherwise the answer is returned as it is, so the
 * caller sees the 429 or 503.
 *
 * Re-sending is safe for these answers: the rate limit refuses before any route runs (a signed
 * request's challenge is not used up, a payment not settled), and the service sends Retry-After on a
 * 503 only where nothing ran. A body marked `retryable: false` is never retried.
 */
export interface PatientFetchOptions {
  /** the most time spent waiting for one request, in ms; 0 turns waiting off */
  maxWaitMs: number;
  onWait?: (line: string) => void;
}

/** The default bound: a minute, the service's rate-limit window. */
export const DEFAULT_MAX_WAIT_MS = 60_000;

/** How long the answer asks to wait, in ms; null when it is no retryable 429/503 or does not say. */
export async function retryDelayMs(res: Response, now = Date.now()): Promise<{ ms: number; why: string } | null> {
  if (res.status !== 429 && res.status !== 503) return null;
  const body = (await res
    .clone()
    .json()
    .catch(() => null)) as { retryable?: unknown; code?: unknown } | null;
  if (body?.retryable === false) return null;
  const code = typeof body?.code === 'string' ? ` ${body.code}` : '';
  const retryAfter = res.headers.get('retry-after');
  if (retryAfter) {
    const seconds = /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) * 1000 : Date.parse(retryAfter) - now;
    if (Number.isFinite(seconds)) return { ms: Math.max(0, seconds), why: `${res.status}${code}, Retry-After ${retryAfter.trim()}` };
  }
  const reset = res.status === 429 ? Number(res.headers.get('x-ratelimit-reset')) : NaN;
  if (Number.isFinite(reset) && reset > 0) return { ms: Math.max(0, reset * 1000 - now), why: `${res.status}${code}, X-RateLimit-Reset ${new Date(reset * 1000).toISOString()}` };
  return null;
}

function describeRequest(input: string | URL | Request, init?: RequestInit): string {
  const method = input instanceof Request ? input.method : (init?.method ?? 'GET');
  const url = input instanceof Request ? input.url : String(input);
  try {
    return `${method} ${new URL(url).pathname}`;
  } catch {
    return method;
  }
}

export function patientFetch(inner: typeof globalThis.fetch, opts: PatientFetchOptions): typeof globalThis.fetch {
  if (!(opts.maxWaitMs > 0)) return inner;
  return async (input, init) => {
    let waited = 0;
    for (;;) {
      // a Request's body can be read once: each try sends a copy, the original stays for the next
      const res = await inner(input instanceof Request ? input.clone() : input, init);
      const delay = await retryDelayMs(res);
      if (!delay || waited + delay.ms > opts.maxWaitMs) return res;
      await res.body?.cancel().catch(() => {});
      const seconds = Math.max(1, Math.ceil(delay.ms / 1000));
      opts.onWait?.(`${describeRequest(input, init)}: service busy (${delay.why}); waiting ${seconds} s, then retrying (at most ${Math.round(opts.maxWaitMs / 1000)} s of waiting in all)`);
      await new Promise((r) => setTimeout(r, delay.ms + 250));
      waited += delay.ms;
    }
  };
}
