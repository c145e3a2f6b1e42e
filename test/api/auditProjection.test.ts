/**
 * GET /audit/{tokenId}/{serial} reads the PostgreSQL projection of the audit topic, paginated
 * (issue 8), against a real localnet (topic + mirror) and PostgreSQL: events published by the
 * publishAudit activity are served in topic order with their consensus timestamps, pages follow
 * limit/offset, bad bounds answer 400, and the topic stays the record (an emptied projection is
 * rebuilt from it; a message published by anything else is projected too).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { dropDatabase, ensureDatabase, migrate } from '../../db/migrate.js';
import { createPassportLedgerActivities } from '../../activities/ledger/passports.js';
import { createLedgerServices } from '../../ledger/services.js';
import type { IdempotentSubmitter } from '../../ledger/submit.js';
import { buildTopicMessage } from '../../ledger/operations.js';
import { catchUpAuditTopic } from '../../api/passports/auditProjection.js';
import type { PassportAuditEvent } from '../../workflows/contracts/passport.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';

describe('GET /audit from the audit topic projection', () => {
  let stack: LedgerStack;
  let sql: Sql;
  let app: FastifyInstance;
  let dbUrl: string;
  let submitter: IdempotentSubmitter;
  let tokenId: string;
  let topicId: string;

  const get = async (url: string) => {
    const res = await app.inject(url);
    return { status: res.statusCode, body: res.json() as Record<string, any> };
  };

  beforeAll(async () => {
    stack = await startLedgerStack('audit');
    const base = new URL(inject('databaseUrl'));
    base.pathname = `${base.pathname}_audit_${randomBytes(3).toString('hex')}`.slice(0, 64);
    dbUrl = base.toString();
    await ensureDatabase(dbUrl);
    await migrate(dbUrl);
    sql = createSql(dbUrl, { max: 4 });
    const { deployment } = stack.ledger;
    tokenId = deployment.passportTokenId;
    topicId = deployment.topics.audit;
    const ledger = createLedgerServices(stack.clients, { sql });
    submitter = ledger.submitter;
    const { publishAudit } = createPassportLedgerActivities({ sql, ledger });
    const event = (serial: number, i: number): PassportAuditEvent =>
      i === 0
        ? { v: 1, type: 'passport.issued', did: `did:hedera:local:0.0.${1000 + serial}`, tokenId, serial, timestamp: 1_700_000_000_000 + i, tier: 'bronze' }
        : { v: 1, type: 'passport.upgraded', did: `did:hedera:local:0.0.${1000 + serial}`, tokenId, serial, timestamp: 1_700_000_000_000 + i, oldTier: 'bronze', newTier: 'silver' };
    for (let i = 0; i < 23; i++) {
      await publishAudit({ idempotencyKey: `audit-test:1:${i}`, event: event(1, i) });
      if (i < 2) await publishAudit({ idempotencyKey: `audit-test:2:${i}`, event: event(2, i) });
    }
    app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '100000' }, { sql, ledger: stack.ledger });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await sql?.end();
    if (dbUrl) await dropDatabase(dbUrl).catch(() => {});
    await stack?.stop();
  });

  it('serves a page of 20 in topic order, each event with its sequence number and consensus timestamp', async () => {
    const r = await get(`/audit/${tokenId}/1`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ total: 23, limit: 20, offset: 0 });
    expect(r.body.events).toHaveLength(20);
    expect(r.body.events[0]).toMatchObject({ type: 'passport.issued', tokenId, serial: 1, tier: 'bronze', did: 'did:hedera:local:0.0.1001' });
    const seqs = r.body.events.map((e: any) => e.sequenceNumber);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(r.body.events.every((e: any) => typeof e.consensusTimestamp === 'string' && e.consensusTimestamp.length > 0)).toBe(true);
    const other = await get(`/audit/${tokenId}/2`);
    expect(other.body).toMatchObject({ total: 2, limit: 20, offset: 0 });
    expect(other.body.events.map((e: any) => e.type)).toEqual(['passport.issued', 'passport.upgraded']);
  });

  it('follows limit and offset; bad bounds answer 400 in the error schema; an unknown passport has no events', async () => {
    const all = (await get(`/audit/${tokenId}/1?limit=100`)).body.events as any[];
    expect(all).toHaveLength(23);
    const page = await get(`/audit/${tokenId}/1?limit=5&offset=20`);
    expect(page.body).toMatchObject({ total: 23, limit: 5, offset: 20 });
    expect(page.body.events).toEqual(all.slice(20, 23));
    for (const bad of ['?limit=101', '?limit=0', '?offset=-1', '?limit=x', '?page=2']) {
      const r = await get(`/audit/${tokenId}/1${bad}`);
      expect([r.status, r.body.code], bad).toEqual([400, 'invalid_request']);
    }
    expect((await get(`/audit/${tokenId}/999`)).body).toEqual({ events: [], total: 0, limit: 20, offset: 0 });
  });

  it('the topic stays the record: an emptied projection is rebuilt from it, with messages published by anything else', async () => {
    const before = (await get(`/audit/${tokenId}/1?limit=100`)).body.events as any[];
    // a message on the topic that no activity wrote to the projection
    const foreign = { v: 1, type: 'passport.revoked', did: 'did:hedera:local:0.0.1001', tokenId, serial: 1, timestamp: 1_700_000_100_000, reason: 'external' };
    await submitter.submit({ idempotencyKey: 'audit-test:foreign', kind: 'topic_message', build: () => buildTopicMessage({ topicId, message: JSON.stringify(foreign) }) });
    await sql`delete from audit_events`;
    await sql`delete from audit_cursors`;
    expect((await get(`/audit/${tokenId}/1`)).body.total).toBe(0);
    // the catch-up reader runs in the background of the route; here it is run directly
    let projected = 0;
    for (let i = 0; i < 50 && projected < 26; i++) {
      projected += await catchUpAuditTopic(sql, stack.ledger.mirror, topicId);
      if (projected < 26) await new Promise((r) => setTimeout(r, 100));
    }
    const after = (await get(`/audit/${tokenId}/1?limit=100`)).body;
    expect(after.total).toBe(24);
    expect(after.events.slice(0, 23)).toEqual(before);
    expect(after.events[23]).toMatchObject({ type: 'passport.revoked', reason: 'external', serial: 1 });
  });
});
