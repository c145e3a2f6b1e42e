/**
 * x402 v2 on the resource-server side, for HBAR on Hedera (`exact` scheme).
 *
 *   await app.register(x402Plugin, { sql, facilitatorUrl, network: 'hedera:testnet' });
 *   app.post('/passport/request', { preHandler: requireVerifiedPayment((request) => ({ amountTinybars, payTo, description })) }, handler);
 *
 * The preHandlers run after the body is parsed and validated, so the price may depend on the body.
 * Without PAYMENT-SIGNATURE they answer 402 with PAYMENT-REQUIRED (base64 JSON { x402Version: 2,
 * error, resource, accepts }) and the SPEC error body plus amount (HBAR), amountTinybars, asset,
 * network, facilitator and payTo. With a payment:
 *
 * - requireVerifiedPayment (the service's paid routes): decodes the payment and verifies it through
 *   the facilitator against the requirements WE rebuilt; nothing is recorded and no money moves. It
 *   sets request.verifiedPayment; the route records the payment with its claim and the workflow
 *   settles it (issue 23: no money ever moves outside a workflow that finishes the job).
 * - requirePayment: verifies, records the payment once in `payments` and SETTLES before the handler,
 *   sets request.payment and the PAYMENT-RESPONSE header. For a resource delivered at once with no
 *   durable work behind it; no route of this service uses it (docs/decisions.md, "x402 settlement in
 *   the workflow").
 *
 * A payment already recorded for another request is a replay: 400 passport_payment_failed.
 *
 * Every PAYMENT-REQUIRED carries the x402 Bazaar discovery extension of the route (api/plugins/x402Bazaar.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Sql } from 'postgres';
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server';
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { ApiError } from '../errors.js';
import type { ErrorCode } from '../../domain/errors.js';
import { deletePendingPayment, findPaymentByTransactionId, insertPayment, markPaymentSettledIfVerified } from '../../db/queries/payments.js';
import { acceptedMatches, paymentTransactionOf, transferPayerOf } from '../../ledger/x402/verifyPayment.js';
import { normalizePayer, normalizeTransactionId } from '../../ledger/x402/ids.js';
import { exactHbarRequirements, facilitatorFeePayer, PAYMENT_TIMEOUT_SECONDS, settleExact } from '../../ledger/x402/settle.js';
import { withSpan } from '../../telemetry/spans.js';
import { bazaarExtensionOf } from './x402Bazaar.js';

export interface PaymentTerms {
  amountTinybars: bigint | number | string;
  payTo: string;
  description: string;
  /** resource URL shown to the payer; defaults to the request URL */
  resource?: string;
  mimeType?: string;
}

export interface SettledPayment {
  /** normalised (ledger/x402/ids.ts): the key of the payment in `payments`, whatever form the facilitator used */
  transactionId: string;
  /** normalised shard.realm.num */
  payer: string;
  amountTinybars: bigint;
  network: string;
  payTo: string;
  settlement: SettleResponse;
}

/** A payment the facilitator verified for this request; recorded and settled by the route's workflow. */
export interface VerifiedPayment {
  /** normalised (ledger/x402/ids.ts) */
  transactionId: string;
  /** normalised shard.realm.num: the account the transfer debits */
  payer: string;
  amountTinybars: bigint;
  network: string;
  payTo: string;
  resource: string;
  description: string;
  /** end of the transaction's validity window: after it (and not on the ledger) it can never settle */
  validUntil: Date;
  /** the PAYMENT-SIGNATURE header as received (base64 JSON of the payer-signed transfer, no key): what the workflow settles */
  paymentSignature: string;
  /** a refusal of this payment in x402 form (the terms and PAYMENT-REQUIRED), e.g. when its settlement fails for good */
  refusal(message: string, hint: string): ApiError;
}

export interface X402PluginOptions {
  sql: Sql;
  /** the facilitator (FACILITATOR_URL); the localnet serves one at :4020 */
  facilitatorUrl: string;
  /** x402 network id: hedera:local | hedera:testnet | hedera:mainnet | hedera:previewnet */
  network: string;
  /** optional: another facilitator client (defaults to @x402/core's HTTPFacilitatorClient) */
  facilitator?: FacilitatorClient;
  /** the facilitator's fee payer; read from GET /supported when omitted */
  feePayer?: string;
  maxTimeoutSeconds?: number;
  /** public base URL used for resource URLs (defaults to the request's host) */
  publicBaseUrl?: string;
}

export interface RequirePaymentOptions {
  /** catalog codes for "payment required" and "payment failed" (defaults: passport_payment_*) */
  requiredCode?: ErrorCode;
  failedCode?: ErrorCode;
}

declare module 'fastify' {
  interface FastifyInstance {
    x402: X402Gate;
  }
  interface FastifyRequest {
    payment?: SettledPayment;
    verifiedPayment?: VerifiedPayment;
  }
}

const TINYBARS_PER_HBAR = 100_000_000n;

function hbarString(tinybars: bigint): string {
  const whole = tinybars / TINYBARS_PER_HBAR;
  const frac = (tinybars % TINYBARS_PER_HBAR).toString().padStart(8, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole.toString();
}

/** The price of a route is the server's own configuration: a price that is not a positive integer is a server error, said plainly. */
function positiveAmount(value: bigint | number | string): bigint {
  let amount: bigint | null = null;
  try {
    amount = BigInt(value);
  } catch {
    amount = null;
  }
  if (amount === null || amount <= 0n) {
    const shown = String(value).slice(0, 32);
    throw new ApiError('internal_server_error', `The price of this request is misconfigured (amount ${JSON.stringify(shown)} tinybars is not a positive integer)`, {
      hint: 'Nothing was charged; the operator must fix the price (GET /catalog lists the prices)',
    });
  }
  return amount;
}

export class X402Gate {
  readonly facilitator: FacilitatorClient;
  private feePayerPromise?: Promise<string>;

  constructor(readonly options: X402PluginOptions) {
    this.facilitator = options.facilitator ?? new HTTPFacilitatorClient({ url: options.facilitatorUrl, timeoutMs: 60_000 });
    if (options.feePayer) this.feePayerPromise = Promise.resolve(options.feePayer);
  }

  /** The fee payer the facilitator advertises for our network (cached; retried after a failure). */
  feePayer(): Promise<string> {
    if (!this.feePayerPromise) {
      this.feePayerPromise = facilitatorFeePayer(this.facilitator, this.options.network);
      this.feePayerPromise.catch(() => {
        this.feePayerPromise = undefined;
      });
    }
    return this.feePayerPromise;
  }

  async requirements(terms: PaymentTerms): Promise<PaymentRequirements> {
    const amount = positiveAmount(terms.amountTinybars);
    let feePayer: string;
    try {
      feePayer = await this.feePayer();
    } catch {
      throw new ApiError('service_unavailable', 'The payment facilitator is unavailable', { hint: 'Retry after 30 seconds' });
    }
    return exactHbarRequirements({ network: this.options.network, amountTinybars: amount, payTo: terms.payTo, feePayer, maxTimeoutSeconds: this.options.maxTimeoutSeconds });
  }
}

export const x402Plugin = fp(
  async function x402(app: FastifyInstance, opts: X402PluginOptions) {
    app.decorate('x402', new X402Gate(opts));
    app.decorateRequest('payment', undefined);
    app.decorateRequest('verifiedPayment', undefined);
  },
  { name: 'x402' },
);

export default x402Plugin;

function resourceUrl(request: FastifyRequest, gate: X402Gate, terms: PaymentTerms): string {
  if (terms.resource) return terms.resource;
  const base = gate.options.publicBaseUrl ?? `${request.protocol}://${request.host}`;
  return `${base.replace(/\/$/, '')}${request.url}`;
}

/**
 * Checks the payment of a request without moving any money: the terms (402 when absent), the
 * payload against the requirements we rebuilt, the transaction (a plain transfer with a regular id,
 * one payer), a replay of a payment recorded for something else, and the facilitator's /verify.
 */
async function verifyRequestPayment(
  request: FastifyRequest,
  terms: (request: FastifyRequest) => PaymentTerms | Promise<PaymentTerms>,
  options: RequirePaymentOptions,
): Promise<{ verified: VerifiedPayment; requirements: PaymentRequirements; payload: PaymentPayload; existing: Awaited<ReturnType<typeof findPaymentByTransactionId>> }> {
  const requiredCode: ErrorCode = options.requiredCode ?? 'passport_payment_required';
  const failedCode: ErrorCode = options.failedCode ?? 'passport_payment_failed';
  const gate = request.server.x402;
  if (!gate) throw new Error('x402Plugin is not registered');
  const t = await terms(request);
  const requirements = await gate.requirements(t).catch((err: unknown) => {
    if (err instanceof ApiError && err.code === 'internal_server_error') request.log.error({ url: request.url, amount: String(t.amountTinybars).slice(0, 32) }, err.message);
    throw err;
  });
  const resource = { url: resourceUrl(request, gate, t), description: t.description, mimeType: t.mimeType ?? 'application/json' };
  const amountTinybars = BigInt(requirements.amount);
  const terms402 = {
    amount: Number(hbarString(amountTinybars)),
    amountTinybars: requirements.amount,
    asset: 'HBAR',
    network: requirements.network,
    facilitator: gate.options.facilitatorUrl,
    payTo: requirements.payTo,
  };
  const paymentRequiredHeader = (error: string) => {
    // the Bazaar discovery extension (x402 v2 extensions.bazaar): how to call the paid route and what it answers
    const extensions = bazaarExtensionOf(request);
    const pr: PaymentRequired = { x402Version: 2, error, resource, accepts: [requirements], ...(extensions ? { extensions } : {}) };
    return { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(pr) };
  };
  const required = (message: string, hint: string) =>
    new ApiError(requiredCode, message, { hint, extra: terms402, headers: paymentRequiredHeader(message) });
  const failed = (message: string, hint: string) =>
    new ApiError(failedCode, message, { hint, extra: terms402, headers: paymentRequiredHeader(message) });

  const header = request.headers['payment-signature'];
  if (typeof header !== 'string' || header.length === 0) {
    throw required(
      'Payment required',
      `Pay ${hbarString(amountTinybars)} HBAR (${requirements.amount} tinybars) to ${requirements.payTo} on ${requirements.network} through ${gate.options.facilitatorUrl} and retry with PAYMENT-SIGNATURE`,
    );
  }
  let payload: PaymentPayload;
  try {
    payload = decodePaymentSignatureHeader(header);
  } catch {
    throw failed('Malformed PAYMENT-SIGNATURE header', 'Send base64 JSON { x402Version: 2, accepted, payload: { transaction } }');
  }
  if (payload?.x402Version !== 2 || !acceptedMatches(payload.accepted, requirements)) {
    throw required('The payment does not match the requirements of this request', 'Build a new payment for the requirements in PAYMENT-REQUIRED');
  }
  // The facilitator checks the transaction against the requirements WE rebuilt, never the client's copy.
  const tx = paymentTransactionOf(payload);
  if (!tx) throw failed('The payment transaction cannot be decoded', 'Send payload.transaction as base64 transaction bytes');
  const transactionId = normalizeTransactionId(tx.transactionId?.toString());
  if (!transactionId) throw failed('The payment transaction has no plain transaction id', 'Build a CryptoTransfer with a regular transaction id (not scheduled, no nonce)');

  const replayed = () => failed('This payment was already used', 'A payment pays for one request; build a new payment (new transaction id) for this one');
  const existing = await findPaymentByTransactionId(gate.options.sql, transactionId);
  if (existing && existing.status !== 'verified') throw replayed();

  const sent = { ...payload, accepted: requirements };
  let verify;
  try {
    verify = await withSpan('x402 verify', { 'x402.network': requirements.network }, () => gate.facilitator.verify(sent, requirements));
  } catch (err) {
    const data = (err as { invalidReason?: string }).invalidReason;
    if (data) throw failed(`Payment rejected by the facilitator: ${data}`, 'Build a new payment for the requirements in PAYMENT-REQUIRED');
    request.log.warn({ err: (err as Error).message }, 'x402 verify failed');
    throw new ApiError('service_unavailable', 'The payment facilitator is unavailable', { hint: 'Retry after 30 seconds with the same payment' });
  }
  if (!verify.isValid) {
    if (verify.invalidReason === 'transaction_already_used' && !existing) throw replayed();
    if (!(verify.invalidReason === 'transaction_already_used' && existing?.status === 'verified')) {
      throw failed(`Payment rejected by the facilitator: ${verify.invalidReason ?? 'invalid'}`, verify.invalidMessage ?? 'Build a new payment for the requirements in PAYMENT-REQUIRED');
    }
    // a previous attempt of this very request recorded the payment and did not finish: go on with it
  }
  // the payer is the account the transfer debits; the facilitator's string (any form) is only a fallback
  const payer = transferPayerOf(tx) ?? normalizePayer(verify.payer) ?? existing?.payer;
  if (!payer) throw failed('The payment has no single paying account', 'Build a transfer debiting exactly one account (yours)');
  const validStart = tx.transactionId?.validStart?.toDate().getTime() ?? Date.now();
  const validUntil = new Date(validStart + (tx.transactionValidDuration ?? PAYMENT_TIMEOUT_SECONDS) * 1000);
  return {
    verified: {
      transactionId,
      payer,
      amountTinybars,
      network: requirements.network,
      payTo: requirements.payTo,
      resource: resource.url,
      description: t.description,
      validUntil,
      paymentSignature: header,
      refusal: failed,
    },
    requirements,
    payload,
    existing,
  };
}

/**
 * preHandler factory for the service's paid routes: `terms(request)` names the price (after body
 * parsing). Verifies the payment (nothing recorded, no money moved) and sets request.verifiedPayment.
 */
export function requireVerifiedPayment(
  terms: (request: FastifyRequest) => PaymentTerms | Promise<PaymentTerms>,
  options: RequirePaymentOptions = {},
): preHandlerAsyncHookHandler {
  return async function x402VerifyPreHandler(this: FastifyInstance, request: FastifyRequest) {
    request.verifiedPayment = (await verifyRequestPayment(request, terms, options)).verified;
  };
}

/**
 * The same check from inside a handler, for a route whose price is known only after its own
 * orchestration has run (api/routes/passports.ts: the plan decides the price and whether to pay at all).
 */
export async function verifyPayment(request: FastifyRequest, terms: PaymentTerms, options: RequirePaymentOptions = {}): Promise<VerifiedPayment> {
  request.verifiedPayment = (await verifyRequestPayment(request, () => terms, options)).verified;
  return request.verifiedPayment;
}

/**
 * preHandler factory that verifies, records and SETTLES before the handler (see the module comment:
 * for resources delivered at once; the service's paid routes use requireVerifiedPayment).
 */
export function requirePayment(
  terms: (request: FastifyRequest) => PaymentTerms | Promise<PaymentTerms>,
  options: RequirePaymentOptions = {},
): preHandlerAsyncHookHandler {
  return async function x402PreHandler(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    const gate = request.server.x402;
    const { verified, requirements, payload, existing } = await verifyRequestPayment(request, terms, options);
    const { transactionId, payer } = verified;
    const replayed = () => verified.refusal('This payment was already used', 'A payment pays for one request; build a new payment (new transaction id) for this one');

    // Claim the transaction id before settling, so a crash between settle and record cannot lose it.
    if (!existing) {
      const claimed = await insertPayment(gate.options.sql, {
        transactionId,
        network: verified.network,
        payer,
        payTo: verified.payTo,
        amountTinybars: verified.amountTinybars,
        resource: verified.resource,
        description: verified.description,
        status: 'verified',
        validUntil: verified.validUntil,
      });
      if (!claimed) throw replayed();
    }

    const outcome = await settleExact(gate.facilitator, payload, requirements, { transactionId, payer });
    if (outcome.kind === 'retry') {
      request.log.warn({ reason: outcome.reason }, 'x402 settle did not complete');
      // outcome unknown: keep the claim; the same payment may be retried and settles idempotently
      throw new ApiError('service_unavailable', 'Settlement did not complete', { hint: 'Retry the same request with the same PAYMENT-SIGNATURE' });
    }
    if (outcome.kind === 'failed') {
      await deletePendingPayment(gate.options.sql, transactionId);
      throw verified.refusal(`Settlement failed: ${outcome.reason}`, outcome.message ?? 'Build a new payment and retry');
    }
    const won = await markPaymentSettledIfVerified(gate.options.sql, transactionId, outcome.response as unknown as Record<string, unknown>);
    if (!won) throw replayed();
    // one id and one payer from here on, whatever form the facilitator answered in
    const { settledAs } = outcome;
    if ((settledAs.transaction && settledAs.transaction !== transactionId) || (settledAs.payer && settledAs.payer !== payer)) {
      request.log.warn({ transactionId, settledId: settledAs.transaction, payer, settledPayer: settledAs.payer }, 'x402 settlement names another transaction or payer than the payment; the payment is kept under its own');
    }
    request.payment = {
      transactionId,
      payer,
      amountTinybars: verified.amountTinybars,
      network: verified.network,
      payTo: verified.payTo,
      settlement: outcome.response,
    };
    reply.header('PAYMENT-RESPONSE', encodePaymentResponseHeader(outcome.response));
  };
}
