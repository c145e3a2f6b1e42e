import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmPayloadCodec, ENCODING } from '../../temporal/codec.js';

describe('AES-GCM payload codec', () => {
  const codec = new AesGcmPayloadCodec(randomBytes(32).toString('hex'));
  const payload = defaultPayloadConverter.toPayload({ posterDid: 'did:hedera:local:0.0.1001', priceHbar: 12 })!;

  it('encrypts so the plaintext is not in the stored bytes, and decrypts back', async () => {
    const [encoded] = await codec.encode([payload]);
    expect(new TextDecoder().decode(encoded.metadata!.encoding!)).toBe(ENCODING);
    expect(Buffer.from(encoded.data!).toString('latin1')).not.toContain('did:hedera');
    const [decoded] = await codec.decode([encoded]);
    expect(defaultPayloadConverter.fromPayload(decoded)).toEqual({ posterDid: 'did:hedera:local:0.0.1001', priceHbar: 12 });
  });

  it('refuses a payload encrypted with another key', async () => {
    const [encoded] = await new AesGcmPayloadCodec(randomBytes(32).toString('hex')).encode([payload]);
    await expect(codec.decode([encoded])).rejects.toThrow();
  });

  it('passes through payloads that are not encrypted', async () => {
    expect(await codec.decode([payload])).toEqual([payload]);
  });
});
