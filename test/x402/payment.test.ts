// x402 end to end on localnet: a tiny fastify app protected by requirePayment, the localnet
// facilitator, and a real @x402/fetch client with our Hedera scheme. 402 -> pay -> 200 with
// PAYMENT-RESPONSE; the same payment again is refused; the facilitator refuses bad payments.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  AccountId, Hbar, HbarUnit, Long, NftId, PrivateKey, ScheduleCreateTransaction, TokenId, TransactionId, TransferTransaction,
} from '@hashgraph/sdk';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { PaymentRequirements } from '@x402/core/types';
import { startLocalnet, type Localnet } from '../../localnet/index.js';
import { createSql, type Sql } from '../../db/client.js';
import errorHandler from '../../api/plugins/errorHandler.js';
import { requirePayment, x402Plugin } from '../../api/plugins/x402.js';
import { createPayingFetch } from '@agent-passport/core/x402/clientScheme';
import { MirrorClient } from '../../ledger/mirror.js';
import { parsePrivateKey } from '@agent-passport/core/keys';
import { findPaymentByTransactionId } from '../../db/queries/payments.js';

let ln: Localnet;
let dir: string;
let sql: Sql;
let app: FastifyInstance;
let baseUrl: string;
let mirror: MirrorClient;
const PRICE = 500_000_000n; // 5 HBAR (bronze)

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'x402-'));
  ln = await startLocalnet({ dataDir: dir, grpcPort: 0, mirrorPort: 0, facilitatorPort: 0 });
  expect(ln.facilitatorUrl).toBeTruthy();
  sql = createSql(inject('databaseUrl'), { max: 2 });
  mirror = new MirrorClient(ln.mirrorUrl);
  app = Fastify({ logger: false });
  await app.register(errorHandler, { bodyLimit: 1024 * 1024 });
  await app.register(x402Plugin, { sql, facilitatorUrl: ln.facilitatorUrl!, network: 'hedera:local' });
  app.post<{ Body: { tier?: string } }>(
    '/buy',
    { preHandler: requirePayment((request) => ({ amountTinybars: (request.body as { tier?: string })?.tier === 'silver' ? 5n * PRICE : PRICE, payTo: ln.config.payTo, description: 'passport' })) },
    async (request) => ({ ok: true, payment: { ...request.payment!, amountTinybars: request.payment!.amountTinybars.toString(), settlement: undefined } }),
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address() as { port: number };
  baseUrl = `http://127.0.0.1:${addr.port}`;
});

afterAll(async () => {
  await app?.close();
  await sql?.end();
  await ln?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const balance = async (id: string) => (await mirror.getHbarBalance(id))!;

describe('x402 on localnet', () => {
  it('answers 402 with PAYMENT-REQUIRED and the SPEC error body', async () => {
    const res = await fetch(`${baseUrl}/buy`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tier: 'silver' }) });
    expect(res.status).toBe(402);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ code: 'passport_payment_required', amount: 25, amountTinybars: (5n * PRICE).toString(), payTo: ln.config.payTo, facilitator: ln.facilitatorUrl });
    const pr = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(pr.x402Version).toBe(2);
    expect(pr.accepts[0]).toMatchObject({ scheme: 'exact', network: 'hedera:local', asset: '0.0.0', amount: (5n * PRICE).toString(), payTo: ln.config.payTo, extra: { feePayer: ln.config.facilitator.feePayer } });
  });

  it('402 -> pay -> 200 with PAYMENT-RESPONSE; the same payment again is refused', async () => {
    const payer = ln.config.accounts[0];
    const payerBefore = await balance(payer.accountId);
    const payToBefore = await balance(ln.config.payTo);
    let paymentHeader: string | null = null;
    const spy: typeof fetch = async (input, init) => {
      const req = new Request(input as string | URL | Request, init);
      if (req.headers.get('payment-signature')) paymentHeader = req.headers.get('payment-signature');
      return fetch(req);
    };
    const payingFetch = createPayingFetch({ accountId: payer.accountId, privateKey: payer.privateKey, node: ln.config.node, maxAmountTinybars: 10n * PRICE, networks: ['local'], fetch: spy });
    const res = await payingFetch(`${baseUrl}/buy`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tier: 'bronze' }) });
    expect(res.status).toBe(200);
    const settle = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settle).toMatchObject({ success: true, network: 'hedera:local', payer: payer.accountId });
    const body = (await res.json()) as { payment: { transactionId: string; payer: string; amountTinybars: string } };
    expect(body.payment).toMatchObject({ transactionId: settle.transaction, payer: payer.accountId, amountTinybars: PRICE.toString() });
    // the payer paid exactly the price (the fee payer paid the fee); payTo got it
    expect(payerBefore - (await balance(payer.accountId))).toBe(PRICE);
    expect((await balance(ln.config.payTo)) - payToBefore).toBe(PRICE);
    expect((await findPaymentByTransactionId(sql, settle.transaction))?.status).toBe('settled');

    // replay: the same PAYMENT-SIGNATURE again
    expect(paymentHeader).toBeTruthy();
    const replay = await fetch(`${baseUrl}/buy`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': paymentHeader! }, body: JSON.stringify({ tier: 'bronze' }) });
    expect(replay.status).toBe(400);
    const rb = (await replay.json()) as { code: string; hint?: string };
    expect(rb.code).toBe('passport_payment_failed');
    expect(rb.hint).toBeTruthy();
    expect((await balance(ln.config.payTo)) - payToBefore).toBe(PRICE);
  });

  it('refuses to pay more than the spend cap', async () => {
    const payer = ln.config.accounts[1];
    const payingFetch = createPayingFetch({ accountId: payer.accountId, privateKey: payer.privateKey, node: ln.config.node, maxAmountTinybars: PRICE, networks: ['local'] });
    await expect(payingFetch(`${baseUrl}/buy`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tier: 'silver' }) })).rejects.toThrow();
  });

  it('the facilitator refuses bad payments and settles idempotently', async () => {
    const facilitator = new HTTPFacilitatorClient({ url: ln.facilitatorUrl! });
    const feePayer = ln.config.facilitator.feePayer;
    const payer = ln.config.accounts[2];
    const payerKey = parsePrivateKey(payer.privateKey);
    const requirements: PaymentRequirements = { scheme: 'exact', network: 'hedera:local', asset: '0.0.0', amount: PRICE.toString(), payTo: ln.config.payTo, maxTimeoutSeconds: 180, extra: { feePayer } };
    const tb = (n: bigint) => Hbar.from(Long.fromString(n.toString()), HbarUnit.Tinybar);
    const freezeSign = async (tx: TransferTransaction | ScheduleCreateTransaction, keys: PrivateKey[]) => {
      tx.setTransactionId(TransactionId.generate(AccountId.fromString(feePayer))).setNodeAccountIds([AccountId.fromString(ln.config.node.accountId)]).setMaxTransactionFee(new Hbar(1)).freeze();
      for (const k of keys) await tx.sign(k);
      return { x402Version: 2, accepted: requirements, payload: { transaction: Buffer.from(tx.toBytes()).toString('base64') } };
    };
    const plain = (entries: [string, bigint][]) => {
      const tx = new TransferTransaction();
      for (const [a, v] of entries) tx.addHbarTransfer(AccountId.fromString(a), tb(v));
      return tx;
    };
    const bad: [string, () => Promise<unknown>, string][] = [
      ['wrong amount', () => freezeSign(plain([[payer.accountId, -PRICE + 1n], [ln.config.payTo, PRICE - 1n]]), [payerKey]), 'amount_mismatch'],
      ['wrong payTo', () => freezeSign(plain([[payer.accountId, -PRICE], [ln.config.escrow, PRICE]]), [payerKey]), 'pay_to_mismatch'],
      ['fee-payer debit', () => freezeSign(plain([[feePayer, -PRICE], [ln.config.payTo, PRICE]]), [payerKey]), 'fee_payer_debited'],
      ['extra NFT transfer', () => freezeSign(plain([[payer.accountId, -PRICE], [ln.config.payTo, PRICE]]).addNftTransfer(new NftId(TokenId.fromString(ln.config.passportTokenId), 1), AccountId.fromString(feePayer), AccountId.fromString(payer.accountId)), [payerKey]), 'token_transfers_not_allowed'],
      ['scheduled transfer', () => freezeSign(new ScheduleCreateTransaction().setScheduledTransaction(plain([[payer.accountId, -PRICE], [ln.config.payTo, PRICE]])), [payerKey]), 'invalid_transaction_type'],
      ['missing payer signature', () => freezeSign(plain([[payer.accountId, -PRICE], [ln.config.payTo, PRICE]]), []), 'missing_payer_signature'],
    ];
    for (const [name, build, reason] of bad) {
      const payload = (await build()) as never;
      const v = await facilitator.verify(payload, requirements);
      expect({ name, isValid: v.isValid, reason: v.invalidReason }).toEqual({ name, isValid: false, reason });
      const s = await facilitator.settle(payload, requirements);
      expect({ name, success: s.success }).toEqual({ name, success: false });
    }

    // a good payment settles once; a retried settle returns the same success without paying twice
    const payToBefore = await balance(ln.config.payTo);
    const good = (await freezeSign(plain([[payer.accountId, -PRICE], [ln.config.payTo, PRICE]]), [payerKey])) as never;
    expect((await facilitator.verify(good, requirements)).isValid).toBe(true);
    const s1 = await facilitator.settle(good, requirements);
    const s2 = await facilitator.settle(good, requirements);
    expect(s1.success).toBe(true);
    expect(s2).toEqual(s1);
    expect((await balance(ln.config.payTo)) - payToBefore).toBe(PRICE);
    const v2 = await facilitator.verify(good, requirements);
    expect(v2.isValid === false && v2.invalidReason).toBe('transaction_already_used');
  });
});
