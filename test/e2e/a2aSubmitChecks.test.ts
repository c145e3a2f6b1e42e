// The A2A chunk submission re-checks what it is handed (issue 23, DESIGN 11 "Money"): the worker never
// trusts its input. Chunks that are not one A2A envelope paid by its sender, or not signed by the
// payer's key, are refused and nothing is submitted; a message at the end of its validity window is
// refused before its first chunk, so the sender does not pay for part of a message that cannot go out. Judged on localnet: no submission record, the sender's balance unchanged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountId, PrivateKey, Timestamp, TopicMessageSubmitTransaction, TransactionId } from '@hashgraph/sdk';
import { createA2aLedgerActivities } from '../../activities/ledger/a2a.js';
import { A2A_CHUNK_BYTES, encodeEnvelope, envelopeOf } from '@agent-passport/core/a2a';
import { parsePrivateKey, signTransaction } from '@agent-passport/core/keys';
import { decodeTopicSubmission, signTopicMessage, splitChunks, type DecodedSubmission } from '../../ledger/topicSubmission.js';
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
});
