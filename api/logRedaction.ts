/**
 * Log redaction at any depth (DESIGN.md section 8). pino's `redact` paths have a fixed depth, so
 * the logger also runs every logged object through `redactDeep` (pino `formatters.log`): any key
 * that names a secret is censored wherever it sits in plain objects, arrays and errors (their
 * enumerable fields and `cause`). Objects are copied only where something is censored; fastify's
 * Request/Reply objects are left to their serializers (whose headers the fixed paths cover).
 */

export const CENSOR = '[redacted]';

/** Key names whose values are secrets, whatever the casing or separator. */
const SECRET_KEY =
  /^(authorization|proxy-authorization|cookie|set-cookie|x-service-signature|payment-signature|x-payment|x-api-key)$|private_?key|api_?key|admin_?token|operator_?key|codec_?key|access_?token|password|passphrase|secret|mnemonic/i;

const MAX_DEPTH = 32;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A copy of `value` with every secret-named field censored; `value` itself when nothing is. */
export function redactDeep<T>(value: T, depth = 0, seen: WeakSet<object> = new WeakSet()): T {
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return value;
  if (depth > MAX_DEPTH) return '[too deep]' as T;
  const isArray = Array.isArray(value);
  const isError = value instanceof Error;
  if (!isArray && !isError && !isPlainObject(value)) return value;
  seen.add(value);

  let copy: Record<string, unknown> | unknown[] | undefined;
  const set = (key: string | number, v: unknown) => {
    if (!copy) {
      if (isArray) copy = [...(value as unknown[])];
      else if (isError) copy = Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value)) as Record<string, unknown>;
      else copy = { ...(value as Record<string, unknown>) };
    }
    (copy as Record<string | number, unknown>)[key] = v;
  };

  if (isArray) {
    (value as unknown[]).forEach((item, i) => {
      const r = redactDeep(item, depth + 1, seen);
      if (r !== item) set(i, r);
    });
  } else {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (isError && 'cause' in record && !keys.includes('cause')) keys.push('cause');
    for (const key of keys) {
      const v = record[key];
      if (isSecretKey(key)) {
        if (v !== undefined && v !== CENSOR) set(key, CENSOR);
        continue;
      }
      const r = redactDeep(v, depth + 1, seen);
      if (r !== v) set(key, r);
    }
  }
  seen.delete(value);
  return (copy ?? value) as T;
}
