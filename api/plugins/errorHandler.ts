/**
 * One error handler for the whole app: every failure leaves as { error, code, retryable?, hint? }
 * with a catalog code. Unexpected errors are logged with the request id and answered without
 * internals. An ApiError carries its status, headers and extra fields: WorkflowPending
 * (api/workflowCalls.ts), the one "still running" of every route, leaves as 202 request_pending
 * with its Location, workflowId and _links.poll.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { ApiError, errorBody } from '../errors.js';
import type { ErrorCode } from '../../domain/errors.js';
import { wwwAuthenticateFor } from '../auth/wwwAuthenticate.js';

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
}

function describeValidation(context: string | undefined, issues: ValidationIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const path = (issue.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
      const keys = issue.params?.keys;
      const unknown = Array.isArray(keys) && keys.length ? ` (${keys.join(', ')})` : '';
      const field = [context, path].filter(Boolean).join('.') || context || 'request';
      return `${field}: ${issue.message ?? 'invalid'}${unknown}`;
    })
    .join('; ');
}

/** Fastify's own error codes for malformed requests, mapped onto catalog codes. */
const FASTIFY_CODES: Record<string, { code: ErrorCode; message: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'payload_too_large', message: 'Request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'unsupported_media_type', message: 'Unsupported content type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'invalid_request', message: 'Content-Length does not match the body' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'invalid_request', message: 'Body is empty but Content-Type is application/json' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'invalid_request', message: 'Body is not valid JSON' },
  FST_ERR_CTP_EMPTY_TYPE: { code: 'unsupported_media_type', message: 'Content-Type header is empty' },
  FST_ERR_CTP_INVALID_TYPE: { code: 'unsupported_media_type', message: 'Content-Type header is invalid' },
};

/**
 * PostgreSQL cannot serve now (the server refuses connections, is out of connection slots, is shutting
 * down or restarting, or the connection broke): the request is answered 503 service_unavailable, which
 * the client may retry, instead of a 500. SQLSTATE class 08 (connection exception), 53300
 * (too_many_connections), 57P01-57P03 (admin shutdown, crash shutdown, cannot connect now), and the
 * `postgres` package's own connection codes.
 */
const DATABASE_UNAVAILABLE = new Set(['53300', '57P01', '57P02', '57P03', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED']);

export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (DATABASE_UNAVAILABLE.has(code) || /^08[0-9A-Z]{3}$/.test(code));
}

/**
 * Fastify's `frameworkErrors`: a path whose percent-encoding cannot be decoded, or a path parameter
 * over the router's length limit, never reaches routing or hooks. It is answered 400 in the error
 * schema, after being counted by the rate limit like any other request.
 */
/**
 * An ApiError's answer: its headers, and on a 401 the WWW-Authenticate challenge (RFC 9110 11.6.1,
 * RFC 6750 3; api/auth/wwwAuthenticate.ts) unless the thrower set its own.
 */
function sendApiError(error: ApiError, request: FastifyRequest, reply: FastifyReply, publicBaseUrl: string | undefined): void {
  if (error.headers) reply.headers(error.headers);
  if (error.status === 401 && !reply.hasHeader('www-authenticate')) {
    reply.header('www-authenticate', wwwAuthenticateFor(request, error.code, error.message, publicBaseUrl));
  }
  reply.code(error.status).send(errorBody(error.code, error.message, error.hint, error.extra));
}

export function answerFrameworkError(app: FastifyInstance, error: FastifyError, request: FastifyRequest, reply: FastifyReply, publicBaseUrl?: string): void {
  reply.header('x-request-id', request.id);
  const badRequest = () => {
    const message = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path segment is too long' : 'The URL path is not valid percent-encoding';
    const hint = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'Path parameters are at most 100 characters' : 'Encode reserved characters as %XX with two hex digits (e.g. % as %25)';
    reply.code(400).send(errorBody('invalid_request', message, hint));
  };
  const limited = app.hasDecorator('limitBadUrl') ? app.limitBadUrl(request, reply) : Promise.resolve();
  limited.then(badRequest, (err: unknown) => {
    if (!(err instanceof ApiError)) return badRequest();
    sendApiError(err, request, reply, publicBaseUrl);
  });
}

export default fp(async function errorHandler(app: FastifyInstance, opts: { bodyLimit: number; publicBaseUrl?: string }) {
  app.setNotFoundHandler((request, reply) => {
    reply
      .code(404)
      .send(errorBody('route_not_found', `No route for ${request.method} ${request.url.split('?')[0]}`, 'See GET /openapi.json for the routes'));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) return sendApiError(error, request, reply, opts.publicBaseUrl);
    if (hasZodFastifySchemaValidationErrors(error)) {
      const hint = describeValidation(error.validationContext, error.validation as ValidationIssue[]);
      return reply.code(400).send(errorBody('invalid_request', `Invalid request ${error.validationContext ?? ''}`.trim(), hint));
    }
    if (error.code === 'FST_ERR_RATE_LIMIT_EXCEEDED' || error.statusCode === 429) {
      return reply.code(429).send(errorBody('rate_limit_exceeded', 'Rate limit exceeded', error.message));
    }
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (known) {
      const hint = known.code === 'payload_too_large' ? `Send at most ${opts.bodyLimit} bytes` : known.code === 'unsupported_media_type' ? 'Send Content-Type: application/json' : error.message;
      return reply.code(error.statusCode ?? 400).send(errorBody(known.code, known.message, hint));
    }
    if (error.validation) {
      const hint = describeValidation(error.validationContext, error.validation as ValidationIssue[]);
      return reply.code(400).send(errorBody('invalid_request', 'Invalid request', hint));
    }
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable');
      return reply.code(503).send(errorBody('service_unavailable', 'The database is unavailable', 'Retry after 30 seconds'));
    }
    if (isResponseSerializationError(error)) {
      request.log.error({ err: error }, 'response did not match its schema');
    } else if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      // Other client errors fastify raises itself (e.g. malformed URL encodings).
      return reply.code(error.statusCode).send(errorBody('invalid_request', 'Invalid request', error.message));
    } else {
      request.log.error({ err: error }, 'unhandled error');
    }
    return reply
      .code(500)
      .send(errorBody('internal_server_error', 'Internal server error', `Retry; quote request id ${request.id} if it persists`));
  });
});
