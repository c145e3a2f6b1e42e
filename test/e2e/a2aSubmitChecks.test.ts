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
import { recordStepAuthorisation } from '../../db/queries/stepAuthorisations.js';
import { a2aChunksSha256 } from '../../domain/stepAuthorisation.js';
import { a2aMessageContract } from '../../workflows/contracts/a2aMessage.js';
import type { TestAgent } from '../support/signing.js';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
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

  // issue 26 item 9: the worker signs an operator-paid message (the deprecated /a2a/send) only after its run used
  // the API's one-time authorisation of exactly these chunks (db/queries/stepAuthorisations.ts); anyone who
  // starts the workflow with copied or made-up chunks (even encrypted with the codec key) gets nothing signed
  describe('operator-paid chunks (unsigned: the worker signs them)', () => {
    const operatorMessage = (from: TestAgent, to: TestAgent, body: string) =>
      freezeTopicMessage({ topicId: ps.stack.deployment.topics.a2a, message: message(from.did, to.did, body), payerAccountId: ps.stack.deployment.operator.accountId, nodeAccountIds: [node()], chunkSize: A2A_CHUNK_BYTES });
    /** what the API writes for POST /a2a/send: the start's nonce, the workflow, the sender, the chunks' digest */
    const authorise = async (workflowId: string, chunks: string[], sender: string) => {
      const nonce = randomUUID();
      await recordStepAuthorisation(ps.sql, { nonce, workflowId, message: a2aMessageContract.type, callerDid: sender, argsSha256: a2aChunksSha256(chunks) });
      return nonce;
    };
    /** the activity as the a2aMessage run `workflowId` runs it */
    const submitIn = (workflowId: string, input: Parameters<typeof submit>[0], runId = randomUUID()): ReturnType<typeof submit> =>
      new MockActivityEnvironment({ workflowExecution: { workflowId, runId } }).run(submit, input);
    const operatorPaid = async () => (await ps.stack.ledger.mirror.getTopicMessages(ps.stack.deployment.topics.a2a)).filter((m) => m.payer_account_id === ps.stack.deployment.operator.accountId).length;

    it("without the API's authorisation: refused, nothing submitted", async () => {
      const [a, b] = ps.agents;
      const chunks = chunksOf(operatorMessage(a!, b!, 'nobody authorised this'));
      expect(await failureOf(submitIn('a2a:op-none', { idempotencyKey: 'a2a-check/op-none', chunks }))).toMatch(/^LedgerError\.INVALID_SIGNATURE: .*only as the API authorised it.*\(absent\)/);
      expect(await failureOf(submitIn('a2a:op-none', { idempotencyKey: 'a2a-check/op-none', chunks, authorisation: randomUUID() }))).toMatch(/\(absent\)/);
      // outside a workflow run there is no run to use an authorisation
      expect(await failureOf(submit({ idempotencyKey: 'a2a-check/op-none', chunks, authorisation: await authorise('a2a:op-none', chunks, a!.did) }))).toMatch(/^LedgerError\.INVALID_SIGNATURE: /);
      expect(await submissions('a2a-check/op-none')).toBe(0);
    });

    it('authorised: signed by the worker and submitted once by the run that used it; another run or workflow with the same input is refused', async () => {
      const [a, b] = ps.agents;
      const sub = operatorMessage(a!, b!, 'authorised by the API');
      const chunks = chunksOf(sub);
      const nonce = await authorise('a2a:op-ok', chunks, a!.did);
      const before = await operatorPaid();
      const runId = randomUUID();
      const r = await submitIn('a2a:op-ok', { idempotencyKey: 'a2a-check/op-ok', chunks, authorisation: nonce }, runId);
      expect(r.sequenceNumbers).toHaveLength(1);
      expect(r.transactionIds[0]).toBe(sub.transactionId);
      // a retry of the same run's activity reuses the record
      expect(await submitIn('a2a:op-ok', { idempotencyKey: 'a2a-check/op-ok', chunks, authorisation: nonce }, runId)).toEqual(r);
      // the same input copied into another workflow, or started again as another run: nothing signed
      expect(await failureOf(submitIn('a2a:op-copy', { idempotencyKey: 'a2a-check/op-copy', chunks, authorisation: nonce }))).toMatch(/\(mismatch\)/);
      expect(await failureOf(submitIn('a2a:op-ok', { idempotencyKey: 'a2a-check/op-again', chunks, authorisation: nonce }))).toMatch(/\(used_elsewhere\)/);
      expect(await submissions('a2a-check/op-copy')).toBe(0);
      expect(await submissions('a2a-check/op-again')).toBe(0);
      expect(await operatorPaid()).toBe(before + 1);
    });

    it('an authorisation covers exactly its chunks and sender: another body under its transaction id, or another sender, is refused', async () => {
      const [a, b, c] = ps.agents;
      const sub = operatorMessage(a!, b!, 'the authorised body');
      const nonce = await authorise('a2a:op-forged', chunksOf(sub), a!.did);
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
      expect(await failureOf(submitIn('a2a:op-forged', { idempotencyKey: 'a2a-check/op-forged', chunks: chunksOf(forgedSub), authorisation: nonce }))).toMatch(/\(mismatch\)/);
      // authorised for a, but the envelope names c
      const otherSender = chunksOf(operatorMessage(c!, b!, 'the authorised body'));
      const forA = await authorise('a2a:op-sender', otherSender, a!.did);
      expect(await failureOf(submitIn('a2a:op-sender', { idempotencyKey: 'a2a-check/op-sender', chunks: otherSender, authorisation: forA }))).toMatch(/\(mismatch\)/);
      expect(await submissions('a2a-check/op-forged')).toBe(0);
      expect(await submissions('a2a-check/op-sender')).toBe(0);
    });
  });
});
