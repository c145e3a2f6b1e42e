/**
 * Agent-to-agent messages (SPEC 4.4, DESIGN.md section 6 "A2A"): the envelope every message carries
 * on the a2a consensus topic, its limits, and the checks shared by the send routes and the
 * projection; the client (packages/client) builds its send-signed bytes with the same functions.
 * Pure: no I/O.
 *
 * Envelope (versioned JSON, UTF-8, the exact bytes submitted to the topic):
 *   {"v":1,"type":"a2a.message","from":"did:hedera:…","to":"did:hedera:…","contentType":"text/plain","body":"…"}
 * Keys in this order when the service builds it (JSON.stringify of encodeEnvelope's object); a
 * client building its own bytes may use any key order and whitespace, but no other keys.
 */

export const A2A_ENVELOPE_VERSION = 1;
export const A2A_MESSAGE_TYPE = 'a2a.message';
/** SPEC 8: the payload (the `body`, UTF-8 bytes) is at most 256 KB; more is 413 a2a_message_too_large. */
export const A2A_MAX_BODY_BYTES = 256 * 1024;
/** HCS chunk size: envelopes longer than this are split into chunks joined by chunk_info. */
export const A2A_CHUNK_BYTES = 1024;
/** DESIGN 6: request body limit of the A2A routes. */
export const A2A_REQUEST_LIMIT_BYTES = 300 * 1024;
export const A2A_DEFAULT_CONTENT_TYPE = 'text/plain';
/** A media type: type/subtype with optional parameters, printable ASCII, at most 128 chars. */
export const CONTENT_TYPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=("[^"\\\r\n]*"|[A-Za-z0-9!#$&^_.+-]+))*$/;

export interface A2aEnvelope {
  v: 1;
  type: typeof A2A_MESSAGE_TYPE;
  from: string;
  to: string;
  contentType: string;
  body: string;
}

const ENVELOPE_KEYS = ['v', 'type', 'from', 'to', 'contentType', 'body'];

export function envelopeOf(p: { from: string; to: string; body: string; contentType?: string }): A2aEnvelope {
  return { v: 1, type: A2A_MESSAGE_TYPE, from: p.from, to: p.to, contentType: p.contentType ?? A2A_DEFAULT_CONTENT_TYPE, body: p.body };
}

/** The exact bytes the service submits for an envelope. */
export function encodeEnvelope(e: A2aEnvelope): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ v: e.v, type: e.type, from: e.from, to: e.to, contentType: e.contentType, body: e.body }));
}

/** Parses topic bytes as an envelope; null for anything else (wrong version or type, extra keys, non-string fields). */
export function decodeEnvelope(bytes: Uint8Array | string): A2aEnvelope | null {
  let m: unknown;
  try {
    const text = typeof bytes === 'string' ? bytes : new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    m = JSON.parse(text);
  } catch {
    return null;
  }
  if (!m || typeof m !== 'object' || Array.isArray(m)) return null;
  const o = m as Record<string, unknown>;
  if (Object.keys(o).some((k) => !ENVELOPE_KEYS.includes(k))) return null;
  if (o.v !== A2A_ENVELOPE_VERSION || o.type !== A2A_MESSAGE_TYPE) return null;
  for (const k of ['from', 'to', 'body'] as const) if (typeof o[k] !== 'string') return null;
  const contentType = o.contentType === undefined ? A2A_DEFAULT_CONTENT_TYPE : o.contentType;
  if (typeof contentType !== 'string') return null;
  return { v: 1, type: A2A_MESSAGE_TYPE, from: o.from as string, to: o.to as string, contentType, body: o.body as string };
}

export function bodyBytes(body: string): number {
  return Buffer.byteLength(body, 'utf8');
}

export function isBodyTooLarge(body: string): boolean {
  // cheap bound first: a UTF-16 unit is at most 3 UTF-8 bytes
  if (body.length * 3 <= A2A_MAX_BODY_BYTES) return false;
  return bodyBytes(body) > A2A_MAX_BODY_BYTES;
}

/** Which fields of a decoded envelope differ from what the request names (empty when they agree). */
export function envelopeMismatches(e: A2aEnvelope, expected: { from: string; to: string; body: string; contentType?: string }): string[] {
  const want = envelopeOf(expected);
  return (['from', 'to', 'contentType', 'body'] as const).filter((k) => e[k] !== want[k]);
}

export function chunkCount(envelopeBytes: number): number {
  return Math.max(1, Math.ceil(envelopeBytes / A2A_CHUNK_BYTES));
}

/**
 * Who may have paid for a message on the topic: the sender's own account (send-with-key,
 * send-signed) or the service's operator (the deprecated /a2a/send, where the service verified the
 * sender's DID signature). Anything else on the open topic is not projected.
 */
export function isTrustedPayer(payerAccountId: string, senderAccountId: string, operatorAccountId: string): boolean {
  return payerAccountId === senderAccountId || payerAccountId === operatorAccountId;
}

