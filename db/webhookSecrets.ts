/**
 * Webhook signing secrets at rest (issue 28): the service must sign every delivery with the
 * subscription's secret, so it keeps the secret, but never in clear. It is sealed with AES-256-GCM
 * under a key derived (HKDF-SHA256, its own label) from PAYLOAD_CODEC_KEY, which the API (that
 * seals it when the subscription is created) and the worker (whose delivery activity opens it from
 * the row) both hold. Without PAYLOAD_CODEC_KEY (development and tests only: production refuses to
 * start without it) a fixed development key is used, marked `dev1:` so such rows are recognisable.
 * The secret never enters a workflow input, a log line or an answer other than the 201 of creation.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const INFO = 'agent-passport webhook secrets v1';
const DEV_KEY_MATERIAL = Buffer.from('agent-passport development webhook key (not a secret)');

function keyFor(codecKeyHex: string | undefined): { key: Buffer; tag: 'v1' | 'dev1' } {
  const material = codecKeyHex ? Buffer.from(codecKeyHex, 'hex') : DEV_KEY_MATERIAL;
  return { key: Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), INFO, 32)), tag: codecKeyHex ? 'v1' : 'dev1' };
}

/** `v1:` (or `dev1:`) and base64 of iv | ciphertext | tag. */
export function sealWebhookSecret(secret: string, codecKeyHex: string | undefined): string {
  const { key, tag } = keyFor(codecKeyHex);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `${tag}:${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64')}`;
}

/** The secret of a sealed value (throws when the key is not the one it was sealed with). */
export function openWebhookSecret(sealed: string, codecKeyHex: string | undefined): string {
  const [tag, data] = sealed.split(':', 2);
  const { key, tag: expected } = keyFor(codecKeyHex);
  if (tag !== expected || !data) throw new Error(`webhook secret sealed as ${tag}, this process opens ${expected}`);
  const buf = Buffer.from(data, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, 12));
  decipher.setAuthTag(buf.subarray(buf.length - 16));
  return Buffer.concat([decipher.update(buf.subarray(12, buf.length - 16)), decipher.final()]).toString('utf8');
}
