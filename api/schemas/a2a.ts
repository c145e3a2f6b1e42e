/** zod schemas of the A2A routes (SPEC 4.4, DESIGN.md section 6 "A2A"). */
import { z } from 'zod';
import { A2A_MAX_BODY_BYTES, CONTENT_TYPE_PATTERN } from '@agent-passport/core/a2a';
import { didString, linkMapSchema, paginationQuery } from './common.js';

// `body` has no length bound here: the request body limit bounds it, and the route answers
// 413 a2a_message_too_large (not 400) for a payload over 256 KB.
const messageFields = {
  from: didString.describe('Sender DID (did:hedera:{network}:{accountId}); must have an active passport'),
  to: didString.describe('Recipient DID; must have an active passport'),
  body: z.string().min(1).describe(`The message payload, at most ${A2A_MAX_BODY_BYTES} bytes of UTF-8 (413 a2a_message_too_large beyond)`),
  contentType: z.string().max(128).regex(CONTENT_TYPE_PATTERN, 'must be a media type such as text/plain or application/json').optional().describe('Media type of body (default text/plain)'),
};

export const a2aSendBodySchema = z.object(messageFields).strict().meta({ id: 'A2aSend' });

export const a2aSendWithKeyBodySchema = z
  .object({
    ...messageFields,
    senderPrivateKey: z.string().min(1).max(256).describe("The sender account's private key (DER hex, or 0x-hex ECDSA). Used in memory to sign, never stored, logged or returned"),
  })
  .strict()
  .meta({ id: 'A2aSendWithKey' });

export const a2aSendSignedBodySchema = z
  .object({
    ...messageFields,
    txBytes: z.string().min(1).regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64').describe('base64 of TopicMessageSubmitTransaction.toBytes() (all chunks), frozen and signed by the sender'),
    signature: z
      .union([z.string().max(200), z.array(z.string().max(200)).min(1).max(300)])
      .optional()
      .describe('Detached hex signature(s) over each chunk body, one per chunk in order, when txBytes is unsigned (chunks frozen for one node)'),
    publicKey: z.string().max(200).optional().describe("The sender's public key (DER or raw hex); required with signature and must be the account's key"),
  })
  .strict()
  .meta({ id: 'A2aSendSigned' });

export const a2aMessageSchema = z
  .object({
    id: z.string().describe('Message id: the first chunk transaction id in mirror form (0.0.x-seconds-nanos)'),
    from: z.string(),
    to: z.string(),
    body: z.string(),
    contentType: z.string(),
    sequenceNumber: z.number().int().describe('Topic sequence number of the first chunk'),
    consensusTimestamp: z.string().describe('Consensus timestamp (seconds.nanos) of the last chunk: when the whole message was on the topic'),
    transactionId: z.string().describe('Transaction id of the first chunk (0.0.x@seconds.nanos)'),
  })
  .meta({ id: 'A2aMessage' });

export const a2aSendResultSchema = a2aMessageSchema
  .extend({ chunks: z.number().int().describe('Number of topic chunks (messages over 1024 bytes are chunked)'), topicId: z.string(), _links: linkMapSchema.optional() })
  .meta({ id: 'A2aSendResult' });

export const a2aInboxQuerySchema = z.object({ did: didString.describe('The recipient DID'), ...paginationQuery }).strict();
export const a2aConversationQuerySchema = z.object({ a: didString.describe('One party'), b: didString.describe('The other party'), ...paginationQuery }).strict();

const pageFields = {
  messages: z.array(a2aMessageSchema),
  count: z.number().int().describe('Messages in this page'),
  total: z.number().int().describe('All matching messages'),
  limit: z.number().int(),
  offset: z.number().int(),
};

export const a2aInboxSchema = z.object({ did: z.string(), ...pageFields }).meta({ id: 'A2aInbox' });
export const a2aConversationSchema = z.object({ a: z.string(), b: z.string(), ...pageFields }).meta({ id: 'A2aConversation' });
