/**
 * A2A messaging over the a2a consensus topic (SPEC 4.4, DESIGN.md section 6 "A2A"):
 *
 *   POST /a2a/send-with-key  the sender's key signs in this process (memory only); the sender pays
 *   POST /a2a/send-signed    the client's own signed TopicMessageSubmitTransaction bytes, checked
 *                            for exactly the expected effect before anything is submitted
 *   POST /a2a/send           deprecated: the operator pays (DID signature headers required)
 *   GET  /a2a/inbox?did=     messages to a DID, newest first
 *   GET  /a2a/conversation?a=&b=  both directions, oldest first
 *
 * Every send ends in the same place: the signed chunk transactions (never a key) go to the
 * a2aMessage workflow, which submits them in order through the idempotent submitter and records
 * the message in the a2a_messages projection once the mirror shows it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { PublicKey } from '@hashgraph/sdk';
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
import {
  A2A_CHUNK_BYTES,
  A2A_MAX_BODY_BYTES,
  A2A_REQUEST_LIMIT_BYTES,
  decodeEnvelope,
  encodeEnvelope,
  envelopeMismatches,
  envelopeOf,
  isBodyTooLarge,
} from '../../domain/a2a.js';
import { parseHederaDid, type HederaDid } from '../../domain/did.js';
import { listPassportsByAccount } from '../../db/queries/passports.js';
import { heldActivePassport } from '../heldPassport.js';
import { listConversation, listInbox, type A2aMessageRow } from '../../db/queries/a2aMessages.js';
import { clientNodeAccountIds } from '../../ledger/client.js';
import { parsePrivateKey, parsePublicKey } from '../../ledger/keys.js';
import { accountPublicKey, requireOwnPrivateKey } from '../auth/ownKey.js';
import { toMirrorTransactionId } from '../../ledger/mirror.js';
import {
  addChunkSignatures,
  allChunksSignedBy,
  checkTopicSubmission,
  decodeTopicSubmission,
  signTopicMessage,
  splitChunks,
  TopicSubmissionError,
  type DecodedSubmission,
} from '../../ledger/topicSubmission.js';
import { a2aMessageWorkflowId, type A2aMessageResult } from '../../workflows/a2aMessage.js';
import { passportState, scopedWorkflowId } from '../passportState.js';
import { isPending, pendingReply, startOrAttach, waitForResult } from '../workflowCalls.js';

/** RFC 9745 Deprecation (a structured-field date: 2026-01-01T00:00:00Z) and RFC 8288 successor links. */
export const SEND_DEPRECATION = '@1767225600';
export const SEND_SUCCESSOR_LINK = '</a2a/send-with-key>; rel="successor-version", </a2a/send-signed>; rel="successor-version"';
/** send-signed carries the message twice (body and txBytes, base64 with per-chunk overhead). */
export const A2A_SIGNED_REQUEST_LIMIT_BYTES = 1024 * 1024;

const TOO_LARGE_HINT = `Send at most ${A2A_MAX_BODY_BYTES} bytes of body; store larger payloads elsewhere and send a link`;

export const SEND_SIGNED_RECIPE = [
  'Build the transaction with the Hedera SDK, exactly like this (JavaScript shown; any SDK works):',
  '1. envelope = UTF-8 bytes of JSON {"v":1,"type":"a2a.message","from":FROM,"to":TO,"contentType":CT,"body":BODY}',
  '   (these keys only; contentType defaults to text/plain; from, to, body and contentType must equal the request fields).',
  '2. tx = new TopicMessageSubmitTransaction().setTopicId(A2A_TOPIC).setMessage(envelope).setChunkSize(1024)',
  '   .setMaxChunks(Math.ceil(envelope.length / 1024)).setNodeAccountIds([NODE]).setTransactionId(TransactionId.generate(SENDER_ACCOUNT)).freeze();',
  '   A2A_TOPIC is topics.a2a and NODE the node account id (GET /.well-known/x402.json and .data/localnet.json name them; localnet: 0.0.3).',
  '3. await tx.sign(senderPrivateKey); txBytes = base64(tx.toBytes()). Messages over 1024 bytes are several chunk transactions: send them all in one txBytes.',
  '   Alternatively send unsigned txBytes plus signature (hex, one per chunk, over each chunk body) and publicKey.',
  'Send within about 100 s of freezing (the transaction is valid 120 s). The server checks: exactly one message to the a2a topic,',
  'payer = the sender account, frozen for our node(s), valid chunk_info, the envelope naming from and to, the sender key signing every chunk;',
  'anything else is 400 or 403 and nothing is submitted.',
].join('\n');

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

function conversationUrl(a: string, b: string): string {
  return `/a2a/conversation?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`;
}

const a2aRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const ledger = ctx.ledger!;
  const sql = ctx.sql!;
  const { network, topics, operator } = ledger.deployment;
  const topicId = topics.a2a;
  const nodeAccountIds = clientNodeAccountIds(ledger.client).map((n) => n.toString());
  /** The node a message built in this process is frozen for. */
  const buildNode = ledger.deployment.node?.accountId ?? nodeAccountIds[0];

  const tooLarge = () => new ApiError('a2a_message_too_large', `The message body is over ${A2A_MAX_BODY_BYTES} bytes`, { hint: TOO_LARGE_HINT });
  /** Bodies over the route's byte limit are the same condition as a body over 256 KB. */
  const errorHandler = (error: Error & { code?: string }) => {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') throw tooLarge();
    throw error;
  };

  function parseParty(did: string, role: 'from' | 'to'): HederaDid {
    const parsed = parseHederaDid(did);
    if (!parsed) throw new ApiError('invalid_request', `${role} ${echo(did)} is not a DID`, { hint: `Use did:hedera:${network}:<accountId>` });
    if (parsed.network !== network) {
      if (role === 'to') throw new ApiError('a2a_recipient_not_found', `Recipient ${echo(did)} is not on ${network}`, { hint: `Recipients are did:hedera:${network}:<accountId> with a passport` });
      throw new ApiError('invalid_request', `Sender ${echo(did)} is not on ${network}`, { hint: `Use did:hedera:${network}:<accountId>` });
    }
    return parsed;
  }

  /** The party's passport is active in the projection and its NFT is still held by the party on the ledger. */
  const hasActivePassport = async (party: HederaDid): Promise<boolean> => (await heldActivePassport(ctx, party.accountId)) !== null;

  /** 403 for a sender or recipient without an active passport; 404 for a recipient that never had one. */
  async function checkParties(from: string, to: string): Promise<{ sender: HederaDid; recipient: HederaDid }> {
    const sender = parseParty(from, 'from');
    const recipient = parseParty(to, 'to');
    if (!(await hasActivePassport(sender))) {
      throw new ApiError('passport_not_found', `Sender ${from} has no active passport (missing or revoked)`, { status: 403, hint: 'Request a passport (POST /passport/request) before sending' });
    }
    if (!(await hasActivePassport(recipient))) {
      const ever = (await listPassportsByAccount(sql, recipient.accountId)).some((p) => p.network === network);
      if (!ever) throw new ApiError('a2a_recipient_not_found', `Recipient ${to} has no passport and no inbox`, { hint: `Check the recipient (GET /agents/${to})` });
      throw new ApiError('passport_not_found', `Recipient ${to} has no active passport (revoked)`, { status: 403, hint: 'Messages go only to agents with an active passport' });
    }
    return { sender, recipient };
  }

  /** Starts (or attaches to) the message's workflow with the signed chunks and answers the message. */
  async function deliver(reply: FastifyReply, msg: { from: string; to: string; body: string; contentType?: string }, sub: DecodedSubmission) {
    const state = passportState(ctx);
    const messageId = toMirrorTransactionId(sub.transactionId);
    const workflowId = scopedWorkflowId(state, a2aMessageWorkflowId(sub.transactionId));
    const chunks = splitChunks(sub).map((b) => Buffer.from(b).toString('base64'));
    const handle = await startOrAttach(ctx, 'a2aMessage', workflowId, { messageId, transactionId: sub.transactionId, chunks, timings: state.timings });
    let result: Awaited<ReturnType<typeof waitForResult<A2aMessageResult>>>;
    try {
      result = await waitForResult<A2aMessageResult>(handle, state.workflowWaitMs);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'execution_failed') {
        throw new ApiError('execution_failed', 'The message could not be submitted to the topic', { hint: `Retry the request; workflow ${workflowId}` });
      }
      throw err;
    }
    const links = {
      inbox: { href: `/a2a/inbox?did=${encodeURIComponent(msg.to)}` },
      conversation: { href: conversationUrl(msg.from, msg.to) },
    };
    if (isPending(result)) return pendingReply(reply, workflowId, conversationUrl(msg.from, msg.to));
    if (result.status === 'refused') {
      const s = result.ledgerStatus;
      if (s === 'INSUFFICIENT_PAYER_BALANCE' || s === 'INSUFFICIENT_ACCOUNT_BALANCE') {
        throw new ApiError('invalid_request', `The ledger refused the message: ${s}`, { hint: 'Fund the paying account and send again' });
      }
      if (s === 'TRANSACTION_EXPIRED' || s === 'INVALID_TRANSACTION_START') {
        throw new ApiError('invalid_request', `The ledger refused the message: ${s}`, { hint: 'Build and sign a new transaction and send it at once' });
      }
      if (s === 'INVALID_SIGNATURE') throw new ApiError('invalid_request', 'The ledger refused the message: INVALID_SIGNATURE', { hint: "Sign every chunk with the sender account's key" });
      throw new ApiError('execution_failed', `The ledger refused the message: ${s}`, { hint: 'Retry the request' });
    }
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
      _links: links,
    };
  }

  const sendResponses = { 200: a2aSendResultSchema, ...errorResponses(202, 400, 401, 403, 404, 413, 500, 502, 503) };

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
    async (request, reply) => {
      const { senderPrivateKey, ...msg } = request.body;
      if (isBodyTooLarge(msg.body)) throw tooLarge();
      const { sender } = await checkParties(msg.from, msg.to);
      const key = await requireOwnPrivateKey(ledger.keys, sender, senderPrivateKey, 'senderPrivateKey', 'sender');
      const sub = await signTopicMessage({ topicId, message: encodeEnvelope(envelopeOf(msg)), payerAccountId: sender.accountId, nodeAccountIds: [buildNode], key, chunkSize: A2A_CHUNK_BYTES });
      return deliver(reply, msg, sub);
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
      preHandler: app.signedRequest((request) => (request.body as { from: string }).from),
    },
    async (request, reply) => {
      const { txBytes, signature, publicKey, ...msg } = request.body;
      if (isBodyTooLarge(msg.body)) throw tooLarge();
      const { sender } = await checkParties(msg.from, msg.to);
      const key = await accountPublicKey(ledger.keys, sender.accountId, 'sender');
      let sub: DecodedSubmission;
      try {
        sub = decodeTopicSubmission(Uint8Array.from(Buffer.from(txBytes, 'base64')));
        checkTopicSubmission(sub, { topicId, payerAccountId: sender.accountId, nodeAccountIds, now: Date.now() });
        if (signature !== undefined) {
          if (!publicKey) throw new TopicSubmissionError(400, 'signature needs publicKey', 'Send the public key that made the signature');
          let given: PublicKey;
          try {
            given = parsePublicKey(publicKey);
          } catch {
            throw new TopicSubmissionError(400, 'publicKey could not be parsed', 'Send the key as DER hex or raw hex');
          }
          if (given.toStringRaw() !== key.toStringRaw()) throw new TopicSubmissionError(403, `publicKey is not the key of ${msg.from}`, "Sign with the sender account's key");
          addChunkSignatures(sub, key, Array.isArray(signature) ? signature : [signature]);
        }
        const envelope = decodeEnvelope(sub.message);
        if (!envelope) throw new TopicSubmissionError(400, 'the transaction message is not an A2A envelope', 'The message must be the JSON envelope {"v":1,"type":"a2a.message",from,to,contentType,body}');
        const differ = envelopeMismatches(envelope, msg);
        if (differ.length) throw new TopicSubmissionError(400, `the envelope differs from the request in ${differ.join(', ')}`, 'Submit exactly the envelope of this request');
        if (!allChunksSignedBy(sub, key)) {
          throw new TopicSubmissionError(400, `the transaction is not validly signed by the key of ${msg.from}`, "Sign every chunk with the sender account's key after freezing, and do not change the bytes afterwards");
        }
      } catch (err) {
        if (err instanceof TopicSubmissionError) {
          throw new ApiError(err.status === 403 ? 'auth_did_mismatch' : 'invalid_request', err.message, { hint: err.hint ?? SEND_SIGNED_RECIPE.split('\n')[0] });
        }
        throw err;
      }
      return deliver(reply, msg, sub);
    },
  );

  const deprecationHeaders = async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('deprecation', SEND_DEPRECATION);
    reply.header('link', SEND_SUCCESSOR_LINK);
  };

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
          'DID signature headers are required and the signed DID must be `from`; the service operator pays and signs the topic message.',
        body: a2aSendBodySchema,
        response: sendResponses,
      },
      preHandler: app.signedRequest((request) => (request.body as { from: string }).from),
    },
    async (request, reply) => {
      const msg = request.body;
      if (isBodyTooLarge(msg.body)) throw tooLarge();
      await checkParties(msg.from, msg.to);
      const sub = await signTopicMessage({
        topicId,
        message: encodeEnvelope(envelopeOf(msg)),
        payerAccountId: operator.accountId,
        nodeAccountIds: [buildNode],
        key: parsePrivateKey(operator.privateKey),
        chunkSize: A2A_CHUNK_BYTES,
      });
      return deliver(reply, msg, sub);
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
