/**
 * A2A messaging over the a2a consensus topic (SPEC 4.4, DESIGN.md section 6 "A2A"):
 *
 *   POST /a2a/send-with-key  the sender's key signs in this process (memory only); the sender pays
 *   POST /a2a/send-signed    the client's own signed TopicMessageSubmitTransaction bytes, checked
 *                            for exactly the expected effect before anything is submitted
 *   POST /a2a/send           deprecated: the operator pays (DID signature headers required), within a
 *                            daily byte budget per sender (api/a2a/operatorBudget.ts); the worker
 *                            signs it (the API holds no operator key)
 *   GET  /a2a/inbox?did=     messages to a DID, newest first
 *   GET  /a2a/conversation?a=&b=  both directions, oldest first
 *
 * Every send ends in the same place: the chunk transactions (never a key) go to the
 * a2aMessage workflow, which submits them in order through the idempotent submitter and records
 * the message in the a2a_messages projection once the mirror shows it. Who may send, the signing
 * and the checks of client bytes, and the delivery are api/a2a/messages.ts; this file is HTTP only.
 */
import { bodyDid } from '../auth/bodyDid.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { errorResponses } from '../schemas/common.js';
import {
  a2aConversationQuerySchema,
  a2aConversationSchema,
  a2aInboxQuerySchema,
  a2aInboxSchema,
  a2aSendBodySchema,
  a2aSendResultSchema,
  a2aSendSignedBodySchema,
  a2aSendWithKeyBodySchema,
} from '../schemas/a2a.js';
import { A2A_MAX_BODY_BYTES, A2A_REQUEST_LIMIT_BYTES, envelopeOf, isBodyTooLarge } from '@agent-passport/core/a2a';
import { parseHederaDid } from '@agent-passport/core/did';
import { listConversation, listInbox, type A2aMessageRow } from '../../db/queries/a2aMessages.js';
import type { DecodedSubmission } from '../../ledger/topicSubmission.js';
import { a2aMessages, SEND_SIGNED_RECIPE, type A2aMessageFields, type OperatorSend } from '../a2a/messages.js';

/** RFC 9745 Deprecation (a structured-field date: 2026-01-01T00:00:00Z) and RFC 8288 successor links. */
export const SEND_DEPRECATION = '@1767225600';
export const SEND_SUCCESSOR_LINK = '</a2a/send-with-key>; rel="successor-version", </a2a/send-signed>; rel="successor-version"';
/** send-signed carries the message twice (body and txBytes, base64 with per-chunk overhead). */
export const A2A_SIGNED_REQUEST_LIMIT_BYTES = 1024 * 1024;

const TOO_LARGE_HINT = `Send at most ${A2A_MAX_BODY_BYTES} bytes of body; store larger payloads elsewhere and send a link`;

function toMessage(r: A2aMessageRow) {
  return {
    id: r.id,
    from: r.from_did,
    to: r.to_did,
    body: r.body,
    contentType: r.content_type,
    sequenceNumber: Number(r.sequence_number),
    consensusTimestamp: r.consensus_timestamp,
    transactionId: r.transaction_id,
  };
}

const sendResponses = { 200: a2aSendResultSchema, ...errorResponses(202, 400, 401, 403, 404, 413, 500, 502, 503) };

/** The deprecated operator-paid send names its successors on every answer. */
async function deprecationHeaders(_request: FastifyRequest, reply: FastifyReply) {
  reply.header('deprecation', SEND_DEPRECATION);
  reply.header('link', SEND_SUCCESSOR_LINK);
}

function conversationUrl(a: string, b: string): string {
  return `/a2a/conversation?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`;
}

const a2aRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const messages = a2aMessages(ctx, app.workflowSettings);
  const { network, topicId } = messages;

  const tooLarge = () => new ApiError('a2a_message_too_large', `The message body is over ${A2A_MAX_BODY_BYTES} bytes`, { hint: TOO_LARGE_HINT });
  /** Bodies over the route's byte limit are the same condition as a body over 256 KB. */
  const errorHandler = (error: Error & { code?: string }) => {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') throw tooLarge();
    throw error;
  };

  /** Delivers the signed message and answers it (202 with the conversation to poll while it runs). */
  async function deliver(msg: A2aMessageFields, sub: DecodedSubmission | OperatorSend) {
    const outcome = await messages.deliver(sub, conversationUrl(msg.from, msg.to));
    const result = outcome.delivered;
    return {
      id: result.id,
      from: msg.from,
      to: msg.to,
      body: msg.body,
      contentType: envelopeOf(msg).contentType,
      sequenceNumber: result.sequenceNumber,
      consensusTimestamp: result.consensusTimestamp,
      transactionId: result.transactionId,
      chunks: result.chunks,
      topicId,
      _links: {
        inbox: { href: `/a2a/inbox?did=${encodeURIComponent(msg.to)}` },
        conversation: { href: conversationUrl(msg.from, msg.to) },
      },
    };
  }

  app.post(
    '/a2a/send-with-key',
    {
      bodyLimit: A2A_REQUEST_LIMIT_BYTES,
      errorHandler,
      schema: {
        tags: ['a2a'],
        summary: "Send a message paid and signed by the sender's key",
        description:
          "The sender's private key signs the topic message (chunked at 1024 bytes) in this process, in memory only: it is never stored, " +
          'logged, returned or handed to a workflow; only the signed transaction bytes are. The transaction id uses the sender account, so the ' +
          'sender pays. 403 when the key is not the sender account key or a passport is missing or revoked; 404 a2a_recipient_not_found; ' +
          '413 a2a_message_too_large over 256 KB. A send still running after 20 s answers 202 with a link to poll.',
        body: a2aSendWithKeyBodySchema,
        response: sendResponses,
      },
    },
    async (request) => {
      const { senderPrivateKey, ...msg } = request.body;
      if (isBodyTooLarge(msg.body)) throw tooLarge();
      return deliver(msg, await messages.signWithSenderKey(msg, senderPrivateKey));
    },
  );

  app.post(
    '/a2a/send-signed',
    {
      bodyLimit: A2A_SIGNED_REQUEST_LIMIT_BYTES,
      errorHandler,
      schema: {
        tags: ['a2a'],
        summary: 'Send a message the client signed itself (the server never sees the key)',
        description:
          'DID signature headers (X-Service-DID, X-Service-Challenge, X-Service-Signature) are required and the signed DID must be `from`. ' +
          'txBytes is the whole message as the SDK serialises it, all chunks in one TransactionList (no separate chunk lists).\n\n' +
          SEND_SIGNED_RECIPE,
        body: a2aSendSignedBodySchema,
        response: sendResponses,
      },
      preHandler: app.signedRequest(bodyDid('from')),
    },
    async (request) => {
      const { txBytes, signature, publicKey, ...msg } = request.body;
      if (isBodyTooLarge(msg.body)) throw tooLarge();
      const sub = await messages.checkSignedSubmission(msg, { txBytes, ...(signature !== undefined ? { signature } : {}), ...(publicKey !== undefined ? { publicKey } : {}) });
      return deliver(msg, sub);
    },
  );

  app.post(
    '/a2a/send',
    {
      bodyLimit: A2A_REQUEST_LIMIT_BYTES,
      errorHandler,
      onRequest: deprecationHeaders,
      schema: {
        tags: ['a2a'],
        deprecated: true,
        summary: 'Deprecated: send a message paid by the service operator',
        description:
          'Deprecated in favour of POST /a2a/send-with-key and POST /a2a/send-signed (Deprecation and Link headers on every answer). ' +
          'DID signature headers are required and the signed DID must be `from`; the service operator pays and signs the topic message, ' +
          'within a budget of A2A_OPERATOR_DAILY_BYTES envelope bytes per sender per UTC day (default 65536), shared by every instance: over it, ' +
          '429 a2a_operator_budget_exceeded with X-RateLimit-Limit/Remaining (bytes), X-RateLimit-Reset (next UTC midnight) and Retry-After. The sender-paid routes have no such budget.',
        body: a2aSendBodySchema,
        response: { ...sendResponses, ...errorResponses(429) },
      },
      preHandler: app.signedRequest(bodyDid('from')),
    },
    async (request) => {
      const msg = request.body;
      if (isBodyTooLarge(msg.body)) throw tooLarge();
      return deliver(msg, await messages.prepareOperatorSend(msg));
    },
  );

  app.get(
    '/a2a/inbox',
    {
      schema: {
        tags: ['a2a'],
        summary: 'Messages addressed to a DID, newest first',
        querystring: a2aInboxQuerySchema,
        response: { 200: a2aInboxSchema, ...errorResponses(400, 500) },
      },
    },
    async (request) => {
      const { did, limit, offset } = request.query;
      if (!parseHederaDid(did)) throw new ApiError('invalid_request', `did ${echo(did)} is not a DID`, { hint: `Use did:hedera:${network}:<accountId>` });
      const { rows, total } = await listInbox(sql, did, { limit, offset });
      return { did, messages: rows.map(toMessage), count: rows.length, total, limit, offset };
    },
  );

  app.get(
    '/a2a/conversation',
    {
      schema: {
        tags: ['a2a'],
        summary: 'Messages between two DIDs in both directions, oldest first',
        querystring: a2aConversationQuerySchema,
        response: { 200: a2aConversationSchema, ...errorResponses(400, 500) },
      },
    },
    async (request) => {
      const { a, b, limit, offset } = request.query;
      for (const [name, did] of [['a', a], ['b', b]] as const) {
        if (!parseHederaDid(did)) throw new ApiError('invalid_request', `${name} ${echo(did)} is not a DID`, { hint: `Use did:hedera:${network}:<accountId>` });
      }
      const { rows, total } = await listConversation(sql, a, b, { limit, offset });
      return { a, b, messages: rows.map(toMessage), count: rows.length, total, limit, offset };
    },
  );
};

export default a2aRoutes;
