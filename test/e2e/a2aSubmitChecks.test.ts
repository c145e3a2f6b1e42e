// The A2A chunk submission re-checks what it is handed (issue 23, DESIGN 11 "Money"): the worker never
// trusts its input. Chunks that are not one A2A envelope paid by its sender, or not signed by the
// payer's key, are refused and nothing is submitted; a message at the end of its validity window is
// refused before its first chunk, so the sender does not pay for part of a message that cannot go out. Judged on localnet: no submission record, the sender's balance unchanged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountId, PrivateKey, Timestamp, TopicMessageSubmitTransaction, TransactionId } from '@hashgraph/sdk';
import { createA2aLedgerActivities } from '../../activities/ledger/a2a.js';
import { A2A_CHUNK_BYTES, encodeEnvelope, envelopeOf } from '@agent-passport/core/a2a';
import { parsePrivateKey, signTransaction } from '@agent-passport/core/keys';
import { freezeTopicMessage, decodeTopicSubmission, signTopicMessage, splitChunks, type DecodedSubmission } from '../../ledger/topicSubmission.js';
import { insertOperatorSend } from '../../db/queries/a2aOperatorSends.js';
import type { TestAgent } from '../support/signing.js';
import { createHash } from 'node:crypto';
import { startPassportStack, type PassportStack } from './passportHarness.js';

describe('A2A chunks are checked again by the activity that submits them', () => {
  let ps: PassportStack;
  let submit: ReturnType<typeof createA2aLedgerActivities>['submitA2aChunks'];

  beforeAll(async () => {
    ps = await startPassportStack('a2acheck');
    submit = createA2aLedgerActivities({ sql: ps.sql, ledger: ps.ledgerDeps }).submitA2aChunks;
  });
  afterAll(async () => {
    await ps?.stop();
  });

  const node = () => ps.stack.localnet.config.node.accountId;
  const chunksOf = (sub: DecodedSubmission) => splitChunks(sub).map((b) => Buffer.from(b).toString('base64'));
  const message = (from: string, to: string, body: string) => encodeEnvelope(envelopeOf({ from, to, body }));
  const submissions = async (key: string) => (await ps.sql`select status from ledger_submissions where idempotency_key like ${`${key}/%`}`).length;
  const failureOf = async (p: Promise<unknown>) => {
    const err = (await p.then(() => null, (e: unknown) => e)) as { type?: string; message?: string } | null;
    return err ? `${err.type}: ${err.message}` : 'submitted';
  };

  it('a message from its payer, signed by its key, is submitted (the control)', async () => {
    const [a, b] = ps.agents;
    const sub = await signTopicMessage({ topicId: ps.stack.deployment.topics.a2a, message: message(a.did, b.did, 'hello'), payerAccountId: a.accountId, nodeAccountIds: [node()], key: parsePrivateKey(a.privateKey, a.keyType), chunkSize: A2A_CHUNK_BYTES });
    const r = await submit({ idempotencyKey: 'a2a-check/ok', chunks: chunksOf(sub) });
    expect(r.sequenceNumbers).toHaveLength(1);
  });

  it('an envelope naming another sender than the payer is refused; nothing is submitted, nothing paid', async () => {
    const [a, b, c] = ps.agents;
    const before = await ps.stack.ledger.mirror.getHbarBalance(a.accountId);
    const sub = await signTopicMessage({ topicId: ps.stack.deployment.topics.a2a, message: message(c.did, b.did, 'not from a'), payerAccountId: a.accountId, nodeAccountIds: [node()], key: parsePrivateKey(a.privateKey, a.keyType), chunkSize: A2A_CHUNK_BYTES });
    expect(await failureOf(submit({ idempotencyKey: 'a2a-check/sender', chunks: chunksOf(sub) }))).toMatch(/^A2aSubmissionInvalid: .*not an A2A envelope paid by its sender/);
    expect(await submissions('a2a-check/sender')).toBe(0);
    expect(await ps.stack.ledger.mirror.getHbarBalance(a.accountId)).toBe(before);
  });

  it('chunks not signed by the payer are refused (INVALID_SIGNATURE) before anything is submitted', async () => {
    const [a, b] = ps.agents;
    const sub = await signTopicMessage({ topicId: ps.stack.deployment.topics.a2a, message: message(a.did, b.did, 'forged'), payerAccountId: a.accountId, nodeAccountIds: [node()], key: PrivateKey.generateED25519(), chunkSize: A2A_CHUNK_BYTES });
    expect(await failureOf(submit({ idempotencyKey: 'a2a-check/key', chunks: chunksOf(sub) }))).toMatch(/^LedgerError\.INVALID_SIGNATURE: /);
    expect(await submissions('a2a-check/key')).toBe(0);
  });

  it('a two-chunk message about to expire is refused before its first chunk: the sender pays for no part of it', async () => {
    const [a, b] = ps.agents;
    const before = await ps.stack.ledger.mirror.getHbarBalance(a.accountId);
    const body = 'x'.repeat(A2A_CHUNK_BYTES + 100);
    const envelope = message(a.did, b.did, body);
    const validStart = Timestamp.fromDate(new Date(Date.now() - 117_000)); // valid 120 s: 3 s left
    const tx = new TopicMessageSubmitTransaction()
      .setTopicId(ps.stack.deployment.topics.a2a)
      .setChunkSize(A2A_CHUNK_BYTES)
      .setMaxChunks(2)
      .setMessage(envelope)
      .setNodeAccountIds([AccountId.fromString(node())])
      .setTransactionId(TransactionId.withValidStart(AccountId.fromString(a.accountId), validStart))
      .freeze();
    await signTransaction(tx, parsePrivateKey(a.privateKey, a.keyType));
    const sub = decodeTopicSubmission(tx.toBytes());
    expect(sub.chunks).toHaveLength(2);
    expect(await failureOf(submit({ idempotencyKey: 'a2a-check/late', chunks: chunksOf(sub) }))).toMatch(/^LedgerError\.TRANSACTION_EXPIRED: /);
    expect(await submissions('a2a-check/late')).toBe(0);
    expect(await ps.stack.ledger.mirror.getHbarBalance(a.accountId)).toBe(before);
  });

  // issue 26 item 9: the worker signs an operator-paid message (the deprecated /a2a/send) only as the API
  // authorised it, for the workflow that claims the authorisation; anyone who starts the workflow with
  // copied or made-up chunks gets nothing signed and the operator pays for nothing
  describe('operator-paid chunks (unsigned: the worker signs them)', () => {
    const operatorMessage = (from: TestAgent, to: TestAgent, body: string) =>
      freezeTopicMessage({ topicId: ps.stack.deployment.topics.a2a, message: message(from.did, to.did, body), payerAccountId: ps.stack.deployment.operator.accountId, nodeAccountIds: [node()], chunkSize: A2A_CHUNK_BYTES });
    const authorise = (sub: DecodedSubmission, sender: string) =>
      insertOperatorSend(ps.sql, { transactionId: sub.transactionId, senderDid: sender, messageSha256: createHash('sha256').update(sub.message).digest() });
    const operatorPaid = async () => (await ps.stack.ledger.mirror.getTopicMessages(ps.stack.deployment.topics.a2a)).filter((m) => m.payer_account_id === ps.stack.deployment.operator.accountId).length;

    it('without the API\'s authorisation: refused, nothing submitted', async () => {
      const [a, b] = ps.agents;
      const sub = operatorMessage(a!, b!, 'nobody authorised this');
      expect(await failureOf(submit({ idempotencyKey: 'a2a-check/op-none', chunks: chunksOf(sub) }))).toMatch(/^LedgerError\.INVALID_SIGNATURE: .*only as the API authorised it/);
      expect(await submissions('a2a-check/op-none')).toBe(0);
    });

    it('authorised: signed by the worker and submitted once, for the workflow that claimed it; the same chunks under another workflow are refused', async () => {
      const [a, b] = ps.agents;
      const sub = operatorMessage(a!, b!, 'authorised by the API');
      await authorise(sub, a!.did);
      const before = await operatorPaid();
      const r = await submit({ idempotencyKey: 'a2a-check/op-ok', chunks: chunksOf(sub) });
      expect(r.sequenceNumbers).toHaveLength(1);
      expect(r.transactionIds[0]).toBe(sub.transactionId);
      // a retry of the same workflow's activity reuses the record
      expect(await submit({ idempotencyKey: 'a2a-check/op-ok', chunks: chunksOf(sub) })).toEqual(r);
      expect(await failureOf(submit({ idempotencyKey: 'a2a-check/op-copy', chunks: chunksOf(sub) }))).toMatch(/^LedgerError\.INVALID_SIGNATURE: /);
      expect(await submissions('a2a-check/op-copy')).toBe(0);
      expect(await operatorPaid()).toBe(before + 1);
    });

    it('an authorisation covers exactly its message: another body or another sender under its transaction id is refused', async () => {
      const [a, b, c] = ps.agents;
      const sub = operatorMessage(a!, b!, 'the authorised body');
      await authorise(sub, a!.did);
      // the same transaction id carrying another message (made up by whoever reaches Temporal)
      const forged = new TopicMessageSubmitTransaction()
        .setTopicId(ps.stack.deployment.topics.a2a)
        .setChunkSize(A2A_CHUNK_BYTES)
        .setMaxChunks(1)
        .setMessage(message(a!.did, b!.did, 'another body'))
        .setNodeAccountIds([AccountId.fromString(node())])
        .setTransactionId(TransactionId.fromString(sub.transactionId))
        .freeze();
      const forgedSub = decodeTopicSubmission(forged.toBytes());
      expect(forgedSub.transactionId).toBe(sub.transactionId);
      expect(await failureOf(submit({ idempotencyKey: 'a2a-check/op-forged', chunks: chunksOf(forgedSub) }))).toMatch(/^LedgerError\.INVALID_SIGNATURE: /);
      const otherSender = operatorMessage(c!, b!, 'the authorised body');
      await authorise(otherSender, a!.did); // authorised for a, but the envelope names c
      expect(await failureOf(submit({ idempotencyKey: 'a2a-check/op-sender', chunks: chunksOf(otherSender) }))).toMatch(/^LedgerError\.INVALID_SIGNATURE: /);
      expect(await submissions('a2a-check/op-forged')).toBe(0);
      expect(await submissions('a2a-check/op-sender')).toBe(0);
    });
  });
});
