/**
 * Sign-in challenges (DID signature authentication; SPEC 5, DESIGN.md sections 6 and 11 "Money";
 * issue 19 item 6): the one definition of their text, used by the API that issues and checks them
 * and by every client that signs them (packages/client, its CLI and MCP tools, the test helpers).
 *
 * A challenge is one line of printable ASCII of exactly this form:
 *
 *   For <origin> only; purpose agent-passport sign-in; did <did>; nonce <32 hex>; expires <ISO time>
 *
 * e.g. `For https://passport.example only; purpose agent-passport sign-in; did
 * did:hedera:testnet:0.0.1234; nonce 0f1e...; expires 2030-01-01T00:00:00.000Z` (one line). <origin>
 * is the service's public origin (scheme://host[:port], as URL.origin writes it), so a signature made
 * for one service cannot be relayed to another; the purpose says what the signature is for. A client
 * signs only a text of this form, for its own DID, naming the origin it called, and not expired
 * (`challengeProblem`), so it never signs arbitrary bytes a server hands it.
 *
 * Why printable ASCII: a signature is only worth something to the ledger over a TransactionBody with
 * a transactionID (field 1) and nodeAccountID (field 2); their tags are the bytes 0x0a and 0x12, and
 * any tag of fields 1-3 is a byte in 0x08-0x1f, any longer tag has a byte >= 0x80. None of these
 * occurs in printable ASCII (0x20-0x7e), so no challenge can carry them, whatever DID or origin it
 * names. (Its first byte, 'F', is also protobuf field 8 with wire type 6, which does not exist:
 * SignedTransaction and Transaction refuse to parse it at all.)
 */
import { parseHederaDid } from './did.js';

export const CHALLENGE_PURPOSE = 'agent-passport sign-in';
/** How long a challenge is valid. */
export const CHALLENGE_TTL_MS = 300_000;
/** The documented form (GET /auth/challenge in /openapi.json). */
export const CHALLENGE_FORM = `For <origin> only; purpose ${CHALLENGE_PURPOSE}; did <did>; nonce <32 lowercase hex>; expires <ISO 8601 UTC time with milliseconds>`;
/** The longest challenge: the headers that carry it are capped (api/plugins/signedRequest.ts). */
export const CHALLENGE_MAX_LENGTH = 512;
/** A client accepts a challenge this long after its stated expiry (clocks differ a little). */
export const CHALLENGE_CLOCK_SKEW_MS = 30_000;

/** What a challenge may contain: printable ASCII, space included. */
export const PRINTABLE_ASCII_LINE = /^[\x20-\x7e]+$/;

const FORM = new RegExp(
  `^For (?<origin>\\S+) only; purpose ${CHALLENGE_PURPOSE}; did (?<did>\\S+); nonce (?<nonce>[0-9a-f]{32}); expires (?<expires>\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z)$`,
);

export interface SignInChallenge {
  origin: string;
  did: string;
  nonce: string;
  expiresAt: Date;
}

/**
 * The origin (scheme://host[:port]) of an http(s) URL, as URL.origin writes it (lowercase host,
 * default port left out, IDN as punycode); null for anything else.
 */
export function originOf(url: string): string | null {
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    return u.origin;
  } catch {
    return null;
  }
}

/** The challenge text for these fields (the API's side). */
export function formatChallenge(c: SignInChallenge): string {
  const text = `For ${c.origin} only; purpose ${CHALLENGE_PURPOSE}; did ${c.did}; nonce ${c.nonce}; expires ${c.expiresAt.toISOString()}`;
  if (parseChallenge(text) === null) throw new Error('challenge fields do not make a challenge of the documented form');
  return text;
}

/** The fields of a challenge of the documented form; null for any other text. */
export function parseChallenge(text: string): SignInChallenge | null {
  if (text.length > CHALLENGE_MAX_LENGTH || !PRINTABLE_ASCII_LINE.test(text)) return null;
  const m = FORM.exec(text);
  if (!m?.groups) return null;
  const { origin, did, nonce, expires } = m.groups as { origin: string; did: string; nonce: string; expires: string };
  if (originOf(origin) !== origin) return null;
  if (!parseHederaDid(did)) return null;
  const expiresAt = new Date(expires);
  if (Number.isNaN(expiresAt.getTime()) || expiresAt.toISOString() !== expires) return null;
  return { origin, did, nonce, expiresAt };
}

/**
 * Why a client must not sign this challenge, or null when it may: the text is of the documented
 * form, names the signer's own DID and the origin the client called, and has not expired.
 */
export function challengeProblem(text: string, expected: { did: string; origin: string; now: number }): string | null {
  const c = parseChallenge(text);
  if (!c) return `the server's challenge is not of the documented form (${CHALLENGE_FORM})`;
  if (c.did !== expected.did) return `the challenge names ${c.did}, not the signer ${expected.did}`;
  if (c.origin !== expected.origin) return `the challenge is for ${c.origin}, not for ${expected.origin}, the service called`;
  if (c.expiresAt.getTime() + CHALLENGE_CLOCK_SKEW_MS <= expected.now) return `the challenge expired at ${c.expiresAt.toISOString()}`;
  return null;
}
