import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmPayloadCodec, ENCODING, REFUSED_ENCODING } from '../../temporal/codec.js';
import type { FastifyRequest } from 'fastify';
import { dataConverter } from '../../temporal/connection.js';
import { loadConfig } from '../../config/index.js';
import { codecTrusts } from '../../api/routes/codec.js';

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

  it('refuses payloads that are not encrypted: converting what decode gives throws a message naming it', async () => {
    const [decoded] = await codec.decode([payload]);
    expect(() => defaultPayloadConverter.fromPayload(decoded)).toThrow(/Unknown encoding: refused: unencrypted payload/);
    expect(new TextDecoder().decode(decoded.metadata!.encoding!)).toBe(REFUSED_ENCODING);
    expect(decoded.data).toHaveLength(0); // nothing of the injected bytes goes on
  });

  it('passes them through when built to accept plaintext (development; the UI codec endpoint)', async () => {
    const lenient = new AesGcmPayloadCodec(randomBytes(32).toString('hex'), { acceptPlaintext: true });
    expect(await lenient.decode([payload])).toEqual([payload]);
  });

  describe('the shared data converter', () => {
    const key = randomBytes(32).toString('hex');
    const decodeWith = async (NODE_ENV: 'development' | 'test' | 'production') => {
      const [c] = dataConverter({ PAYLOAD_CODEC_KEY: key, NODE_ENV })!.payloadCodecs;
      return (await c.decode([payload]))[0];
    };

    it('refuses unencrypted payloads outside development, accepts them in development', async () => {
      expect(await decodeWith('development')).toEqual(payload);
      for (const env of ['test', 'production'] as const) expect(new TextDecoder().decode((await decodeWith(env)).metadata!.encoding!)).toBe(REFUSED_ENCODING);
    });

    it('cannot be built without a key in production (no codec there would accept anything)', () => {
      expect(() => dataConverter({ NODE_ENV: 'production' })).toThrow(/PAYLOAD_CODEC_KEY is required/);
      expect(dataConverter({ NODE_ENV: 'test' })).toBeUndefined();
    });
  });

  // issue 26 item 5: a process started with no NODE_ENV is production, so it fails closed
  describe('with NODE_ENV unset (the default)', () => {
    const key = randomBytes(32).toString('hex');

    it('the data converter refuses unencrypted payloads, and cannot be built without a key', async () => {
      const [c] = dataConverter(loadConfig({ PAYLOAD_CODEC_KEY: key }))!.payloadCodecs;
      const [decoded] = await c.decode([payload]);
      expect(new TextDecoder().decode(decoded.metadata!.encoding!)).toBe(REFUSED_ENCODING);
      expect(() => dataConverter(loadConfig({}))).toThrow(/PAYLOAD_CODEC_KEY is required/);
    });

    it('/codec does not trust a loopback caller without the admin token', () => {
      const loopback = { headers: {}, raw: { socket: { remoteAddress: '127.0.0.1' } } } as unknown as FastifyRequest;
      expect(codecTrusts(loadConfig({ PAYLOAD_CODEC_KEY: key, ADMIN_TOKEN_SHA256: 'a'.repeat(64) }), loopback)).toBe(false);
      expect(codecTrusts(loadConfig({ NODE_ENV: 'development', PAYLOAD_CODEC_KEY: key }), loopback)).toBe(true);
    });
  });
});
