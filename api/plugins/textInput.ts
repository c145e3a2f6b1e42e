/**
 * Every text a request carries is text (issue 26 item 7): a NUL, bytes that are not UTF-8, or a lone
 * UTF-16 surrogate anywhere in the query, the path or the body is answered 400 invalid_request, in the
 * error schema and with the rate-limit headers (registered after the limiter, so its onRequest counts
 * first), before any route sees it. PostgreSQL refuses NUL in text (a query with one used to answer 500), and
 * bytes that are not UTF-8 would otherwise reach storage silently replaced by U+FFFD.
 *
 *   - URL (onRequest, before any route's own hooks and the content-type check): each run of
 *     percent-encoded bytes must decode to UTF-8 without NUL. A `%`
 *     not followed by two hex digits stays the literal text the query parser makes of it; a path
 *     whose encoding cannot be decoded never gets here (answerFrameworkError answers it).
 *   - body bytes (preParsing): a request with a body has it checked as UTF-8 while it streams in, for
 *     every content type (the API takes only text bodies: JSON and forms).
 *   - parsed body (preValidation): no string, nor object key, holds NUL (JSON's \u0000) or a lone
 *     surrogate (JSON's \ud800), at any depth (walked without recursion).
 *
 * Callback-style hooks with early exits (no `%` in the URL, no body), so the hot reads pay a string
 * search and nothing else.
 */
import { isUtf8 } from 'node:buffer';
import { pipeline, Transform } from 'node:stream';
import type { FastifyInstance, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../errors.js';

const PERCENT_RUN = /(?:%[0-9A-Fa-f]{2})+/g;

/** What is wrong with a URL's percent-encoded bytes: a NUL, bytes that are not UTF-8, or nothing (null). */
export function urlTextProblem(url: string): 'a NUL character' | 'bytes that are not UTF-8' | null {
  if (!url.includes('%')) return null;
  for (const [run] of url.matchAll(PERCENT_RUN)) {
    // a multi-byte character is always encoded whole, so each run decodes on its own
    const bytes = Buffer.from(run.replace(/%/g, ''), 'hex');
    if (bytes.includes(0)) return 'a NUL character';
    if (!isUtf8(bytes)) return 'bytes that are not UTF-8';
  }
  return null;
}

const wellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();

/** What is wrong with a parsed body's strings (keys included): a NUL, a lone surrogate, or nothing (null). */
export function bodyTextProblem(body: unknown): 'a NUL character' | 'a lone UTF-16 surrogate' | null {
  const pending: unknown[] = [body];
  while (pending.length) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return 'a NUL character';
      if (!wellFormed(value)) return 'a lone UTF-16 surrogate';
    } else if (Array.isArray(value)) {
      pending.push(...value);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) pending.push(key, item);
    }
  }
  return null;
}

function refusal(where: 'URL' | 'body', what: string): ApiError {
  return new ApiError('invalid_request', `The request ${where} holds ${what}`, {
    hint: 'Send text as UTF-8 without NUL characters (in a URL, percent-encode its UTF-8 bytes: é as %C3%A9)',
  });
}

/** The body as it streams in, passed on unchanged; fails with the 400 at the first byte that is not UTF-8. */
function utf8Checked(): Transform {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  return new Transform({
    transform(chunk: Buffer, _encoding, cb) {
      try {
        decoder.decode(chunk, { stream: true });
        cb(null, chunk);
      } catch {
        cb(refusal('body', 'bytes that are not UTF-8'));
      }
    },
    flush(cb) {
      try {
        decoder.decode(); // a character cut off at the end
        cb();
      } catch {
        cb(refusal('body', 'bytes that are not UTF-8'));
      }
    },
  });
}

/** Methods Fastify never reads a body of. */
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE']);

const hasBody = (request: FastifyRequest) => {
  if (BODYLESS.has(request.method)) return false;
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
};

export default fp(async function textInputPlugin(app: FastifyInstance) {
  app.addHook('preParsing', (request, _reply, payload, done) => {
    if (!hasBody(request)) return done(null, payload);
    // pipeline: the client's abort reaches the body reader as an error, as it would without this stream
    done(null, pipeline(payload, utf8Checked(), () => {}));
  });
  app.addHook('onRequest', (request: FastifyRequest, _reply, done: HookHandlerDoneFunction) => {
    const inUrl = urlTextProblem(request.url);
    done(inUrl ? refusal('URL', inUrl) : undefined);
  });
  app.addHook('preValidation', (request: FastifyRequest, _reply, done: HookHandlerDoneFunction) => {
    const inBody = request.body === undefined ? null : bodyTextProblem(request.body);
    done(inBody ? refusal('body', inBody) : undefined);
  });
});
