import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildTestApp } from '../support/app.js';

describe('catalog and metadata routes', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildTestApp({ HEDERA_NETWORK: 'testnet', MARKET_FEE_BPS: '300' });
  });
  afterAll(() => app.close());

  it('GET /catalog lists the four tiers with price and capabilities', async () => {
    const res = await app.inject('/catalog');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([
      { name: 'bronze', price: 5, capabilities: ['api_call', 'data_consume'] },
      { name: 'silver', price: 25, capabilities: ['api_call', 'data_consume', 'data_provide'] },
      { name: 'gold', price: 100, capabilities: ['api_call', 'data_consume', 'data_provide', 'payment'] },
      { name: 'platinum', price: 500, capabilities: ['api_call', 'data_consume', 'data_provide', 'payment', 'orchestration'] },
    ]);
  });

  it('GET /api/meta/errors serves the 30 spec codes with every required field', async () => {
    const res = await app.inject('/api/meta/errors');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.total_count).toBe(30);
    expect(body.count).toBe(30);
    expect(body.errors).toHaveLength(30);
    for (const e of body.errors) {
      expect(Object.keys(e).sort()).toEqual(
        expect.arrayContaining(['affected_routes', 'agent_impact', 'code', 'hint_template', 'http_status', 'recovery_action']),
      );
      expect(Number.isInteger(e.http_status)).toBe(true);
    }
    expect(body.errors.filter((e: { charge?: string }) => e.charge === 'never').map((e: { code: string }) => e.code)).toEqual([
      'policy_refusal',
      'insufficient_subject',
      'execution_failed',
      'data_unavailable',
    ]);
  });

  it('GET /api/meta/fees uses the configured network and marketplace fee', async () => {
    const body = (await app.inject('/api/meta/fees')).json();
    expect(body.network).toBe('testnet');
    expect(body.total_count).toBe(body.fees.length);
    expect(typeof body.currency_note).toBe('string');
    const market = body.fees.find((f: { category: string }) => f.category === 'marketplace');
    expect(market.notes).toContain('300 basis points');
    for (const f of body.fees) {
      for (const key of ['service', 'category', 'price_usd', 'price_hbar', 'unit', 'description', 'free_tier']) expect(f).toHaveProperty(key);
    }
  });

  it('GET /api/meta/trust-tiers serves the 7-entry ladder', async () => {
    const body = (await app.inject('/api/meta/trust-tiers')).json();
    expect(body.total_count).toBe(7);
    expect(body.tiers.map((t: { name: string }) => t.name)).toEqual([
      'unverified',
      'observer',
      'did_verified',
      'passport_holder',
      'passport_verified',
      'marketplace_participant',
      'trusted_agent',
    ]);
  });

  it('/openapi.json is a valid OpenAPI 3.1 document with version 0.13.0 covering the routes', async () => {
    const res = await app.inject('/openapi.json');
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('0.13.0');
    for (const path of ['/catalog', '/api/meta/errors', '/api/meta/fees', '/api/meta/trust-tiers', '/health']) expect(doc.paths).toHaveProperty(path);
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('/docs serves the interactive reference page', async () => {
    const res = await app.inject('/docs/');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
  });
});
