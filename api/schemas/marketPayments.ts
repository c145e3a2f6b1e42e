/**
 * zod schemas of the marketplace payment routes: /market/sign, prepare-payment, the non-escrow
 * (SPEC 4.4a; decisions in docs/decisions.md). Complete's own fields are in ./market.ts.
 */
import { z } from 'zod';
import { VERIFIER_TYPES } from '../../domain/market.js';
import { didString } from './common.js';

/** base64 of Transaction.toBytes(); 16 KB is far above a transfer (about 200 bytes). */
export const txBytesString = z.string().min(1).max(16_384).regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64');
/** a private key: DER hex (ED25519 or ECDSA) or 0x-hex (ECDSA). Never echoed. */
export const privateKeyString = z.string().min(1).max(256);

export const marketSignBodySchema = z
  .object({
    txBytes: txBytesString.describe('base64 of a frozen Hedera transaction for one node (e.g. the txBytes of prepare-payment)'),
    privateKey: privateKeyString.describe('ECDSA secp256k1 as 0x-hex (32 bytes) or DER hex, or ED25519 as DER hex. Used in memory to sign; never stored, logged or returned'),
  })
  .strict()
  .meta({ id: 'MarketSign' });

export const marketSignResultSchema = z
  .object({
    signature: z.string().describe("hex signature over the transaction's body bytes (ED25519: of the bytes; ECDSA: of their keccak256, as the ledger verifies)"),
    publicKey: z.string().describe('DER hex of the public key that signed'),
    keyType: z.enum(['ED25519', 'ECDSA']),
    transactionId: z.string().describe('the transaction id of the signed transaction (0.0.x@seconds.nanos)'),
  })
  .meta({ id: 'MarketSignResult' });

export const preparePaymentBodySchema = z.object({ posterDid: didString.describe('The poster DID; must equal the signed DID') }).strict().meta({ id: 'MarketPreparePayment' });

const tinybarString = z.string().regex(/^\d+$/).describe('tinybars, as a decimal string');

export const preparePaymentResultSchema = z
  .object({
    taskId: z.string(),
    txBytes: z.string().describe('base64 of the frozen, unsigned transfer: sign its body offline (or with POST /market/sign) and send it to complete'),
    txId: z.string().describe('its transaction id (0.0.x@seconds.nanos); valid 120 s from its valid start'),
    validUntil: z.string().describe('ISO time after which the transfer can no longer reach consensus: call prepare-payment again'),
    nodeAccountId: z.string(),
    payerAccountId: z.string().describe("the poster's account: pays the price and the transaction fee"),
    claimerAccountId: z.string(),
    treasuryAccountId: z.string(),
    priceHbar: z.number(),
    priceTinybars: tinybarString,
    claimerTinybars: tinybarString.describe('price less the marketplace fee'),
    feeTinybars: tinybarString.describe('MARKET_FEE_BPS of the price, rounded down'),
    memo: z.string(),
  })
  .meta({ id: 'MarketPreparedPayment' });

export const verifyBodySchema = z.object({ callerDid: z.string().max(128).optional().describe('informational: who asks') }).strict().optional();
export const verifyResultSchema = z
  .object({
    taskId: z.string(),
    passed: z.boolean(),
    reasons: z.array(z.string()).describe('why it did not pass (empty when it passed)'),
    verificationAttempts: z.number().int().describe('verifier runs on this task so far (a verify that reuses the outcome runs none)'),
    verifierType: z.enum(VERIFIER_TYPES),
    status: z.string().describe('the task status, unchanged (delivered)'),
    verifiedAt: z.string().optional().describe('when this outcome was found'),
    reused: z.boolean().optional().describe('true: the outcome of an earlier run of this delivery, answered again (nothing ran)'),
  })
  .meta({ id: 'MarketVerifyResult' });
