/**
 * Sending A2A messages over the a2a consensus topic (SPEC 4.4, DESIGN.md section 6 "A2A"): who may
 * send to whom, the three ways a message gets signed, and its delivery. The routes
 * (api/routes/a2a.ts) parse, authorise the sender by DID signature, call these and map the answer.
 *
 *   checkParties         sender and recipient hold active passports (projection and ledger)
 *   signWithSenderKey    send-with-key: the sender's key signs in this process, in memory only
 *   checkSignedSubmission  send-signed: the client's own signed bytes, checked for exactly the
 *                        expected effect before anything is submitted
 *   prepareOperatorSend  the deprecated send: the operator pays, within the sender's daily byte
 *                        budget (api/a2a/operatorBudget.ts); this process holds no operator key
 *                        (issue 26 item 9), so it freezes the message unsigned (explicit transaction
 *                        id of the operator, explicit node); deliver then records its one-time
 *                        authorisation (db/queries/stepAuthorisations.ts), which the worker uses
 *                        before it signs
 *   deliver              the chunk transactions (never a key) go to the a2aMessage workflow,
 *                        which submits them in order through the idempotent submitter and records
 *                        the message once the mirror shows it; waited for at most the bounded wait
 */
import { PublicKey } from '@hashgraph/sdk';
import type { AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { scopedWorkflowId, type WorkflowSettings } from '../workflowSettings.js';
import { startOrAttach, waitForResult } from '../workflowCalls.js';
import { heldActivePassport } from '../passports/heldPassport.js';
import { accountPublicKey, requireOwnPrivateKey } from '../auth/ownKey.js';
import { OperatorByteBudget } from './operatorBudget.js';
import { A2A_CHUNK_BYTES, decodeEnvelope, encodeEnvelope, envelopeMismatches, envelopeOf } from '@agent-passport/core/a2a';
import { parseHederaDid, type HederaDid } from '@agent-passport/core/did';
import { listPassportsByAccount } from '../../db/queries/passports.js';
import { clientNodeAccountIds } from '../../ledger/client.js';
import { parsePublicKey } from '@agent-passport/core/keys';
import { recordStepAuthorisation } from '../../db/queries/stepAuthorisations.js';
import { a2aChunksSha256 } from '../../domain/stepAuthorisation.js';
import { bound } from '../../temporal/workflows.js';
import { toMirrorTransactionId } from '../../ledger/mirror.js';
import {
  addChunkSignatures,
  allChunksSignedBy,
  freezeTopicMessage,
  checkTopicSubmission,
  decodeTopicSubmission,
  signTopicMessage,
  splitChunks,
  TopicSubmissionError,
  type DecodedSubmission,
} from '../../ledger/topicSubmission.js';
import { a2aMessageContract, a2aMessageWorkflowId, type A2aMessageResult } from '../../workflows/contracts/a2aMessage.js';

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

export interface A2aMessageFields {
  from: string;
  to: string;
  body: string;
  contentType?: string;
}

/** A message frozen for the operator to pay, which the worker signs under the authorisation deliver records. */
export interface OperatorSend {
  sub: DecodedSubmission;
  senderDid: string;
}

/** What a send ends in: the message on the topic (its workflow still running after the bounded wait is a WorkflowPending naming `pollUrl`). */
export type DeliveryOutcome = { delivered: Extract<A2aMessageResult, { status: 'delivered' }> };

/** The A2A messaging of one app. */
export function a2aMessages(ctx: AppContext, settings: WorkflowSettings) {
  const ledger = ctx.ledger!;
  const sql = ctx.sql!;
  const { network, topics, operator } = ledger.deployment;
  const topicId = topics.a2a;
  const nodeAccountIds = clientNodeAccountIds(ledger.client).map((n) => n.toString());
  /** what the operator pays for on the deprecated /a2a/send, per sender per UTC day (shared by every instance) */
  const operatorBudget = new OperatorByteBudget(sql, ctx.config.A2A_OPERATOR_DAILY_BYTES, () => ctx.now?.() ?? new Date());
  /** The node a message built in this process is frozen for. */
  const buildNode = ledger.deployment.node?.accountId ?? nodeAccountIds[0];

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

  /** send-with-key: the parties, then the sender's own key (checked against the account) signs in memory. */
  async function signWithSenderKey(msg: A2aMessageFields, senderPrivateKey: string): Promise<DecodedSubmission> {
    const { sender } = await checkParties(msg.from, msg.to);
    const key = await requireOwnPrivateKey(ledger.keys, sender, senderPrivateKey, 'senderPrivateKey', 'sender');
    return signTopicMessage({ topicId, message: encodeEnvelope(envelopeOf(msg)), payerAccountId: sender.accountId, nodeAccountIds: [buildNode], key, chunkSize: A2A_CHUNK_BYTES });
  }

  /** send-signed: the parties, then the client's bytes carry exactly this message, paid and signed by the sender. */
  async function checkSignedSubmission(msg: A2aMessageFields, signed: { txBytes: string; signature?: string | string[]; publicKey?: string }): Promise<DecodedSubmission> {
    const { txBytes, signature, publicKey } = signed;
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
    return sub;
  }

  /**
   * The deprecated send: the parties, then the sender's daily operator budget (429), then the message
   * frozen unsigned for the operator to pay and its authorisation recorded; the worker signs it.
   */
  async function prepareOperatorSend(msg: A2aMessageFields): Promise<OperatorSend> {
    await checkParties(msg.from, msg.to);
    const message = encodeEnvelope(envelopeOf(msg));
    await operatorBudget.take(msg.from, message.length);
    const sub = freezeTopicMessage({ topicId, message, payerAccountId: operator.accountId, nodeAccountIds: [buildNode], chunkSize: A2A_CHUNK_BYTES });
    return { sub, senderDid: msg.from };
  }

  /**
   * Starts (or attaches to) the message's workflow with its chunks; a ledger refusal is the error the
   * sender can act on. An operator-paid message first gets its one-time authorisation: the start's
   * nonce, this workflow, its sender and the digest of exactly the chunks the worker is to sign.
   */
  async function deliver(send: DecodedSubmission | OperatorSend, pollUrl: string): Promise<DeliveryOutcome> {
    const sub = 'senderDid' in send ? send.sub : send;
    const messageId = toMirrorTransactionId(sub.transactionId);
    const workflowId = scopedWorkflowId(settings, a2aMessageWorkflowId(sub.transactionId));
    const chunks = splitChunks(sub).map((b) => Buffer.from(b).toString('base64'));
    const input = bound({ messageId, transactionId: sub.transactionId, chunks, timings: settings.timings }, workflowId, a2aMessageContract.type);
    if ('senderDid' in send) {
      await recordStepAuthorisation(sql, { nonce: input.binding.nonce, workflowId, message: a2aMessageContract.type, callerDid: send.senderDid, argsSha256: a2aChunksSha256(chunks) });
    }
    const handle = await startOrAttach(ctx, a2aMessageContract, workflowId, input);
    const result = await waitForResult(handle, settings.workflowWaitMs, pollUrl).catch((err: unknown) => {
      if (err instanceof ApiError && err.code === 'execution_failed') {
        throw new ApiError('execution_failed', 'The message could not be submitted to the topic', { hint: `Retry the request; workflow ${workflowId}` });
      }
      throw err;
    });
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
    return { delivered: result };
  }

  return { topicId, network, checkSignedSubmission, signWithSenderKey, prepareOperatorSend, deliver };
}
