// The A2A envelope and the checks on pre-signed topic-message bytes (pure: no network).
import { describe, expect, it } from 'vitest';
import { AccountId, PrivateKey, TopicMessageSubmitTransaction, Transaction, TransactionId } from '@hashgraph/sdk';
import { decodeEnvelope, encodeEnvelope, envelopeMismatches, envelopeOf, isBodyTooLarge, A2A_MAX_BODY_BYTES } from '@agent-passport/core/a2a';
import {
  addChunkSignatures,
  allChunksSignedBy,
  checkTopicSubmission,
  decodeTopicSubmission,
  signTopicMessage,
  splitChunks,
  TopicSubmissionError,
} from '../../ledger/topicSubmission.js';

const from = 'did:hedera:local:0.0.1001';
const to = 'did:hedera:local:0.0.1002';

function build(message: Uint8Array, payer = '0.0.1001', topic = '0.0.1010') {
  return new TopicMessageSubmitTransaction()
    .setTopicId(topic)
    .setMessage(message)
    .setChunkSize(1024)
    .setMaxChunks(Math.ceil(message.length / 1024))
    .setNodeAccountIds([AccountId.fromString('0.0.3')])
    .setTransactionId(TransactionId.generate(payer))
    .freeze();
}

describe('A2A envelope', () => {
  it('round-trips and refuses other shapes', () => {
    const e = envelopeOf({ from, to, body: 'hi' });
    expect(decodeEnvelope(encodeEnvelope(e))).toEqual({ v: 1, type: 'a2a.message', from, to, contentType: 'text/plain', body: 'hi' });
    expect(decodeEnvelope('{"v":2,"type":"a2a.message","from":"a","to":"b","body":"x"}')).toBeNull();
    expect(decodeEnvelope('{"v":1,"type":"a2a.message","from":"a","to":"b","body":"x","extra":1}')).toBeNull();
    expect(decodeEnvelope('{"v":1,"type":"a2a.message","from":"a","to":"b","body":1}')).toBeNull();
    expect(decodeEnvelope(new Uint8Array([0xff, 0xfe]))).toBeNull();
    expect(envelopeMismatches(e, { from, to, body: 'other', contentType: 'text/plain' })).toEqual(['body']);
  });

  it('measures the 256 KB limit in UTF-8 bytes', () => {
    expect(isBodyTooLarge('a'.repeat(A2A_MAX_BODY_BYTES))).toBe(false);
    expect(isBodyTooLarge('a'.repeat(A2A_MAX_BODY_BYTES + 1))).toBe(true);
    expect(isBodyTooLarge('é'.repeat(A2A_MAX_BODY_BYTES / 2 + 1))).toBe(true);
  });
});

describe('pre-signed topic messages', () => {
  const key = PrivateKey.generateED25519();
  const ecdsa = PrivateKey.generateECDSA();
  const exp = { topicId: '0.0.1010', payerAccountId: '0.0.1001', nodeAccountIds: ['0.0.3'], now: Date.now() };

  it('decodes a chunked message, checks it and splits it into one transaction per chunk', async () => {
    const msg = new Uint8Array(Buffer.from('m'.repeat(2500)));
    const tx = build(msg);
    await tx.sign(key);
    const d = decodeTopicSubmission(tx.toBytes());
    expect(d.chunks).toHaveLength(3);
    expect(Buffer.from(d.message).equals(Buffer.from(msg))).toBe(true);
    expect(d.transactionId).toBe(tx.transactionId!.toString());
    expect(() => checkTopicSubmission(d, exp)).not.toThrow();
    expect(allChunksSignedBy(d, key.publicKey)).toBe(true);
    expect(allChunksSignedBy(d, ecdsa.publicKey)).toBe(false);
    const parts = splitChunks(d).map((b) => Transaction.fromBytes(b));
    expect(parts.map((p) => p.transactionId!.toString())).toEqual(d.chunks.map((c) => c.transactionId));
  });

  it('refuses another topic (400), another payer (403), another node, an expired transaction', async () => {
    const d = decodeTopicSubmission(build(new Uint8Array([1, 2, 3])).toBytes());
    const status = (e: Partial<typeof exp>) => {
      try {
        checkTopicSubmission(d, { ...exp, ...e });
        return 0;
      } catch (err) {
        return (err as TopicSubmissionError).status;
      }
    };
    expect(status({ topicId: '0.0.9' })).toBe(400);
    expect(status({ payerAccountId: '0.0.1002' })).toBe(403);
    expect(status({ nodeAccountIds: ['0.0.4'] })).toBe(400);
    expect(status({ now: Date.now() + 200_000 })).toBe(400);
  });

  it('refuses a partial chunk list and unsigned chunks; accepts detached signatures per chunk (ECDSA too)', async () => {
    const tx = build(new Uint8Array(Buffer.from('n'.repeat(2100))));
    await tx.sign(key);
    const d = decodeTopicSubmission(tx.toBytes());
    // chunk 2 alone: its chunk info names 3 chunks starting at another transaction
    expect(() => decodeTopicSubmission(splitChunks(d)[1])).toThrow(TopicSubmissionError);

    const unsigned = decodeTopicSubmission(build(new Uint8Array(Buffer.from('u'.repeat(1500))), '0.0.1001').toBytes());
    expect(allChunksSignedBy(unsigned, ecdsa.publicKey)).toBe(false);
    addChunkSignatures(unsigned, ecdsa.publicKey, unsigned.chunks.map((c) => Buffer.from(ecdsa.sign(c.entries[0].bodyBytes)).toString('hex')));
    expect(allChunksSignedBy(unsigned, ecdsa.publicKey)).toBe(true);
    expect(() => addChunkSignatures(unsigned, ecdsa.publicKey, ['00'])).toThrow(TopicSubmissionError);
  });

  it('signs a message in process for the payer', async () => {
    const d = await signTopicMessage({ topicId: '0.0.1010', message: encodeEnvelope(envelopeOf({ from, to, body: 'x'.repeat(1500) })), payerAccountId: '0.0.1001', nodeAccountIds: ['0.0.3'], key, chunkSize: 1024 });
    expect(d.chunks).toHaveLength(2);
    expect(d.payerAccountId).toBe('0.0.1001');
    expect(allChunksSignedBy(d, key.publicKey)).toBe(true);
    expect(decodeEnvelope(d.message)?.body).toBe('x'.repeat(1500));
  });

  it('refuses bytes that are not a topic message', () => {
    expect(() => decodeTopicSubmission(new Uint8Array(Buffer.from('nope')))).toThrow(TopicSubmissionError);
  });
});
