// The x402 Bazaar discovery extension in a real 402 (issue 29 item 7): POST /passport/request of the
// app (PostgreSQL, a localnet with its facilitator), signed and unpaid, answers 402 whose
// PAYMENT-REQUIRED carries extensions.bazaar; @x402/extensions (what facilitators and discovery
// clients run) validates it and extracts the route's method, URL, input and output from it.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { extractDiscoveryInfo, validateAndExtract, validateDiscoveryExtensionSpec, type DiscoveryExtension } from '@x402/extensions/bazaar';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';

describe('x402 Bazaar discovery in the 402 of a paid route', () => {
  let stack: LedgerStack;
  let sql: Sql;
  let app: FastifyInstance;
  let agent: TestAgent;

  beforeAll(async () => {
    stack = await startLedgerStack('bazaar');
    sql = createSql(inject('databaseUrl'), { max: 3 });
    app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '100000', PUBLIC_BASE_URL: 'https://passport.example' }, { sql, ledger: stack.ledger });
    agent = stack.localnet.config.accounts.find((a) => a.keyType === 'ED25519')!;
  });
  afterAll(async () => {
    await app?.close();
    await sql?.end();
    await stack?.stop();
  });

  it('PAYMENT-REQUIRED carries extensions.bazaar, which the library validates and extracts', async () => {
    const body = { tier: 'bronze', endpoint: 'https://agent.example/a2a' };
    const res = await app.inject({ method: 'POST', url: '/passport/request', headers: await signedHeaders(app, agent, { origin: 'https://passport.example' }), payload: body });
    expect(res.statusCode).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers['payment-required'] as string);
    expect(required.x402Version).toBe(2);
    const bazaar = required.extensions?.bazaar as DiscoveryExtension;
    expect(bazaar).toBeDefined();

    // the library's own checks: info against its schema, and the protocol's invariants
    const checked = validateAndExtract(bazaar);
    expect(checked.errors).toBeUndefined();
    expect(checked.valid).toBe(true);
    expect(validateDiscoveryExtensionSpec(bazaar as unknown as Record<string, unknown>)).toEqual({ valid: true });
    expect(checked.info!.input).toMatchObject({ type: 'http', method: 'POST', bodyType: 'json', body });
    // the output: an example of the 200 and its schema
    expect(checked.info!.output).toMatchObject({ type: 'json', example: { tier: 'bronze' } });
    const outputSchema = (bazaar.schema as any).properties.output.properties.example;
    expect(outputSchema.required).toEqual(expect.arrayContaining(['tokenId', 'serialNumber', 'did', 'tier', 'hashScanLink']));
    // the input schema is the route's body schema (tier required, no other field)
    const inputBody = (bazaar.schema as any).properties.input.properties.body;
    expect(inputBody).toMatchObject({ type: 'object', required: ['tier'], additionalProperties: false });
    expect(Object.keys(inputBody.properties).sort()).toEqual(['capabilities', 'did', 'endpoint', 'tier']);
    expect(JSON.stringify(bazaar)).not.toContain('$ref');

    // a facilitator's view: the payment payload echoes the extensions (x402 v2 clients copy them)
    const payload: PaymentPayload = { x402Version: 2, resource: required.resource, accepted: required.accepts[0]!, payload: {}, extensions: required.extensions };
    const discovered = extractDiscoveryInfo(payload, required.accepts[0]!);
    expect(discovered).not.toBeNull();
    expect(discovered).toMatchObject({ resourceUrl: 'https://passport.example/passport/request', method: 'POST', x402Version: 2 });
  });

  it('a refused payment is a 402 with the same extension', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/passport/request',
      headers: { ...(await signedHeaders(app, agent, { origin: 'https://passport.example' })), 'payment-signature': Buffer.from(JSON.stringify({ x402Version: 2, accepted: {}, payload: {} })).toString('base64') },
      payload: { tier: 'silver' },
    });
    expect(res.statusCode).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers['payment-required'] as string);
    const checked = validateAndExtract(required.extensions!.bazaar as DiscoveryExtension);
    expect(checked.valid).toBe(true);
    expect(checked.info!.input).toMatchObject({ method: 'POST', body: { tier: 'silver' } });
  });
});
