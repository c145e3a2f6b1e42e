// One form for payment ids whatever a facilitator returns (ledger/x402/ids.ts), the payer read from
// the transfer itself, and a price <= 0 answered as a clear error in the error schema, not a bare 500.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { AccountId, Hbar, HbarUnit, TransactionId, TransferTransaction } from '@hashgraph/sdk';
import type { FacilitatorClient } from '@x402/core/server';
import errorHandler from '../../api/plugins/errorHandler.js';
import { requirePayment, x402Plugin } from '../../api/plugins/x402.js';
import { normalizePayer, normalizeTransactionId } from '../../ledger/x402/ids.js';
import { transferPayerOf } from '../../ledger/x402/verifyPayment.js';
import { createSql, type Sql } from '../../db/client.js';

describe('normalised payment ids', () => {
  it('a transaction id in SDK or mirror form is one id (SDK form, 9-digit nanos)', () => {
    const sdk = '0.0.5@1700000000.000000001';
    expect(normalizeTransactionId(sdk)).toBe(sdk);
    expect(normalizeTransactionId('0.0.5-1700000000-000000001')).toBe(sdk);
    expect(normalizeTransactionId(' 0.0.5-1700000000-000000001 ')).toBe(sdk);
    // short nanos are nanoseconds, as TransactionId.fromString reads them
    expect(normalizeTransactionId('0.0.5@1700000000.1')).toBe(TransactionId.fromString('0.0.5@1700000000.1').toString());
    expect(normalizeTransactionId('0.0.5-1700000000-1')).toBe(sdk);
    expect(normalizeTransactionId('0.0.1234@1700000000.123456789')).toBe('0.0.1234@1700000000.123456789');
  });

  it('anything else is not a payment id', () => {
    for (const bad of ['', '0.0.5', '0.0.5@1700000000.000000001?scheduled', '0.0.5@1700000000.000000001/1', '0.0.5@1700000000', 'x@1.2', '0.0.5@1700000000.0000000001', 42, null, undefined, `0.0.5@${'9'.repeat(80)}.1`]) {
      expect(normalizeTransactionId(bad), String(bad)).toBeNull();
    }
  });

  it('a payer plain, with a checksum or CAIP-10 prefixed is shard.realm.num', () => {
    expect(normalizePayer('0.0.1012')).toBe('0.0.1012');
    expect(normalizePayer('0.0.1012-abcde')).toBe('0.0.1012');
    expect(normalizePayer('hedera:testnet:0.0.1012')).toBe('0.0.1012');
    expect(normalizePayer('hedera:local:0.0.1012-vfmkw')).toBe('0.0.1012');
    for (const bad of ['', 'unknown', '0x00000000000000000000000000000000000003f4', 'eip155:1:0.0.5', 'hedera:moon:0.0.5', '0.0.5-abc', 5, null]) {
      expect(normalizePayer(bad), String(bad)).toBeNull();
    }
  });

  it('the payer of a transfer is the one account it debits', () => {
    const tx = new TransferTransaction()
      .addHbarTransfer(AccountId.fromString('0.0.1012'), Hbar.from(-5, HbarUnit.Hbar))
      .addHbarTransfer(AccountId.fromString('0.0.1001'), Hbar.from(5, HbarUnit.Hbar));
    expect(transferPayerOf(tx)).toBe('0.0.1012');
    const two = new TransferTransaction()
      .addHbarTransfer(AccountId.fromString('0.0.1012'), Hbar.from(-2, HbarUnit.Hbar))
      .addHbarTransfer(AccountId.fromString('0.0.1013'), Hbar.from(-3, HbarUnit.Hbar))
      .addHbarTransfer(AccountId.fromString('0.0.1001'), Hbar.from(5, HbarUnit.Hbar));
    expect(transferPayerOf(two)).toBeNull();
  });
});

describe('x402 requirements with an amount <= 0', () => {
  let sql: Sql;
  let app: FastifyInstance;
  const facilitatorCalls: string[] = [];
  // the facilitator must never be reached for a misconfigured price
  const facilitator: FacilitatorClient = {
    getSupported: async () => {
      facilitatorCalls.push('supported');
      return { kinds: [{ x402Version: 2, scheme: 'exact', network: 'hedera:local', extra: { feePayer: '0.0.1000' } }], extensions: [], signers: {} };
    },
    verify: async () => {
      facilitatorCalls.push('verify');
      throw new Error('not reached');
    },
    settle: async () => {
      facilitatorCalls.push('settle');
      throw new Error('not reached');
    },
  };

  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'), { max: 1 });
    app = Fastify({ logger: false });
    await app.register(errorHandler, { bodyLimit: 1024 * 1024 });
    await app.register(x402Plugin, { sql, facilitatorUrl: 'http://127.0.0.1:9/facilitator', network: 'hedera:local', facilitator });
    for (const [path, amount] of [['/zero', 0n], ['/negative', -5n], ['/garbage', 'five']] as const) {
      app.post(path, { preHandler: requirePayment(() => ({ amountTinybars: amount, payTo: '0.0.1001', description: 'misconfigured' })) }, async () => ({ ok: true }));
    }
    app.post('/fine', { preHandler: requirePayment(() => ({ amountTinybars: 1n, payTo: '0.0.1001', description: 'one tinybar' })) }, async () => ({ ok: true }));
  });
  afterAll(async () => {
    await app?.close();
    await sql?.end();
  });

  it.each(['/zero', '/negative', '/garbage'])('%s answers internal_server_error in the error schema, saying the price is misconfigured', async (path) => {
    const res = await app.inject({ method: 'POST', url: path, payload: {} });
    expect(res.statusCode).toBe(500);
    const body = res.json() as Record<string, unknown>;
    expect(body).toMatchObject({ code: 'internal_server_error' });
    expect(body.error).toMatch(/price of this request is misconfigured/);
    expect(body.hint).toMatch(/Nothing was charged/);
    expect(res.headers['payment-required']).toBeUndefined();
    expect(facilitatorCalls).toEqual([]);
  });

  it('a positive amount still answers 402 with the terms', async () => {
    const res = await app.inject({ method: 'POST', url: '/fine', payload: {} });
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ code: 'passport_payment_required', amountTinybars: '1' });
  });
});
