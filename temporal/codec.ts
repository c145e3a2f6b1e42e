/**
 * AES-256-GCM payload codec: every payload the worker and clients put into Temporal history is
 * encrypted at rest, so request bodies in history are unreadable without PAYLOAD_CODEC_KEY.
 * The codec endpoint (api/routes/codec.ts) lets the Temporal Web UI decode for key holders.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

export const ENCODING = 'binary/encrypted';
const METADATA_ENCODING_KEY = 'encoding';
const KEY_ID_KEY = 'encryption-key-id';
const IV_LENGTH = 12;
const TAG_LENGTH = 16;

function encrypt(data: Uint8Array, key: Buffer): Uint8Array {
  const iv = randomBytes(IV_LENGTH);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(data), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

function decrypt(data: Uint8Array, key: Buffer): Uint8Array {
  const buf = Buffer.from(data);
  const iv = buf.subarray(0, IV_LENGTH);
  const tag = buf.subarray(buf.length - TAG_LENGTH);
  const body = buf.subarray(IV_LENGTH, buf.length - TAG_LENGTH);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(body), decipher.final()]);
}

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly key: Buffer;

  /** keyHex: 32 bytes as 64 hex characters. keyId is recorded so keys can be rotated later. */
  constructor(keyHex: string, private readonly keyId = 'default') {
    this.key = Buffer.from(keyHex, 'hex');
    if (this.key.length !== 32) throw new Error('payload codec key must be 32 bytes (64 hex characters)');
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => ({
      metadata: {
        [METADATA_ENCODING_KEY]: new TextEncoder().encode(ENCODING),
        [KEY_ID_KEY]: new TextEncoder().encode(this.keyId),
      },
      data: encrypt(temporal.api.common.v1.Payload.encode(payload).finish(), this.key),
    }));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
      if (!encoding || new TextDecoder().decode(encoding) !== ENCODING || !payload.data) return payload;
      return temporal.api.common.v1.Payload.decode(decrypt(payload.data, this.key));
    });
  }
}
