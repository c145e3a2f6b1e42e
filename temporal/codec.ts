/**
 * AES-256-GCM payload codec: every payload the worker and clients put into Temporal history is
 * encrypted at rest, so request bodies in history are unreadable without PAYLOAD_CODEC_KEY.
 * The codec endpoint (api/routes/codec.ts) lets the Temporal Web UI decode for key holders.
 *
 * Unencrypted payloads (issue 19 item 2; DESIGN 11 "Money"): anyone who can write to Temporal can put
 * a plaintext payload into a workflow start, an Update or a signal without knowing the key. Unless
 * built with `acceptPlaintext`, decode turns every payload that is not ours into a refusal: a payload
 * whose encoding (REFUSED_ENCODING) no converter knows, so converting it throws "Unknown encoding:
 * refused: ...". Refusing at conversion rather than throwing from decode is deliberate: the SDK
 * converts an Update's arguments inside the Update's own handling, so a plaintext Update is rejected
 * (never accepted into history) and the workflow carries on; a plaintext workflow start fails its
 * workflow task with that message; a plaintext result, query answer or memo read by the API's client
 * fails to convert with it. A decode that threw would fail the whole workflow task instead, and an
 * injected Update or signal would then block the workflow on every retry.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

export const ENCODING = 'binary/encrypted';
/** The encoding decode gives an unencrypted payload it refuses; the converter's error names it. */
export const REFUSED_ENCODING = 'refused: unencrypted payload (only payloads encrypted with PAYLOAD_CODEC_KEY are accepted outside NODE_ENV=development)';
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

export interface AesGcmPayloadCodecOptions {
  /** recorded with each payload so keys can be rotated later (default 'default') */
  keyId?: string;
  /** decode passes unencrypted payloads through unchanged (development, and the UI's display-only codec endpoint); default: refuse them */
  acceptPlaintext?: boolean;
}

/** What an unencrypted payload decodes to when refused: no converter knows its encoding. */
function refusedPayload(): Payload {
  return { metadata: { [METADATA_ENCODING_KEY]: new TextEncoder().encode(REFUSED_ENCODING) }, data: new Uint8Array() };
}

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly key: Buffer;
  private readonly keyId: string;
  private readonly acceptPlaintext: boolean;

  /** keyHex: 32 bytes as 64 hex characters. */
  constructor(keyHex: string, opts: AesGcmPayloadCodecOptions = {}) {
    this.key = Buffer.from(keyHex, 'hex');
    if (this.key.length !== 32) throw new Error('payload codec key must be 32 bytes (64 hex characters)');
    this.keyId = opts.keyId ?? 'default';
    this.acceptPlaintext = opts.acceptPlaintext ?? false;
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
      if (!encoding || new TextDecoder().decode(encoding) !== ENCODING || !payload.data) return this.acceptPlaintext ? payload : refusedPayload();
      return temporal.api.common.v1.Payload.decode(decrypt(payload.data, this.key));
    });
  }
}
