// One round of webhook delivery (activities/web/webhookDelivery.ts; issue 28) against a real receiver
// and PostgreSQL: a 2xx moves the cursor and the body verifies with `standardwebhooks`; a failing
// receiver fails the round (Temporal retries it) until its failures have lasted WEBHOOK_RETRY_HOURS,
// then the subscription is disabled with its reason and its owner gets a webhook.disabled event.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Webhook } from 'standardwebhooks';
import { createSql, type Sql } from '../../db/client.js';
import { appendEvents, listEventsFor } from '../../db/queries/events.js';
import { createWebhook, findWebhook, listDeliveries } from '../../db/queries/webhooks.js';
import { sealWebhookSecret } from '../../db/webhookSecrets.js';
import { webhookBacklog } from '../../db/queries/businessMetrics.js';
import { webhookSecretOf } from '../../domain/events.js';
import { createWebhookDeliveryActivities } from '../../activities/web/webhookDelivery.js';
import { recordSecret } from '../support/secrets.js';

describe('a round of webhook delivery', () => {
  let sql: Sql;
  let server: http.Server;
  let url = '';
  let answer = 204;
  const bodies: { body: string; headers: http.IncomingHttpHeaders }[] = [];
  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'), { max: 4 });
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c)).on('end', () => {
        bodies.push({ body, headers: req.headers });
        res.writeHead(answer).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await sql?.end();
  });

  const subscribe = async (owner: string) => {
    const secret = webhookSecretOf(crypto.getRandomValues(new Uint8Array(32)));
    recordSecret('webhook secret', secret);
    const row = await createWebhook(sql, { id: randomUUID(), ownerDid: owner, url, events: ['a2a.message_received', 'webhook.disabled'], capabilities: [], secretSealed: sealWebhookSecret(secret, undefined) }, 5);
    if (row === 'limit') throw new Error('limit');
    return { row, secret };
  };
  const message = (owner: string) =>
    sql.begin((tx) => appendEvents(tx, [{ type: 'a2a.message_received', subject: randomUUID(), audience: [owner], data: { fromDid: 'did:test:x' }, key: randomUUID() }]));
  const activities = (retryHours: number) => createWebhookDeliveryActivities({ sql, codecKey: undefined, retryHours, development: false, allowPrivate: true });

  it('signs each delivery per Standard Webhooks and moves the cursor on 2xx', async () => {
    const owner = `did:test:${randomUUID()}`;
    const { row, secret } = await subscribe(owner);
    const [id] = await message(owner);
    answer = 204;
    const round = await new MockActivityEnvironment().run(activities(72).deliverWebhookEvents, { subscriptionId: row.id });
    expect(round).toEqual({ status: 'delivered', delivered: 1, lastEventId: id, more: false });
    const got = bodies.at(-1)!;
    expect(got.headers['webhook-id']).toBe(id);
    expect(new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).toMatchObject({ id, type: 'a2a.message_received' });
    expect((await findWebhook(sql, row.id))!.cursor).toBe(id);
    // nothing more to send: an empty round
    expect(await new MockActivityEnvironment().run(activities(72).deliverWebhookEvents, { subscriptionId: row.id })).toMatchObject({ delivered: 0, more: false });
  });

  it('a failing receiver fails the round until WEBHOOK_RETRY_HOURS have passed, then the webhook is disabled and its owner told', async () => {
    const owner = `did:test:${randomUUID()}`;
    const { row } = await subscribe(owner);
    const [id] = await message(owner);
    // the worker's backlog gauge counts it (issue 28 metrics)
    const backlog = await webhookBacklog(sql);
    expect(backlog.events).toBeGreaterThanOrEqual(1);
    expect(backlog.oldestSeconds).toBeGreaterThanOrEqual(0);
    answer = 500;
    const short = activities(0.5 / 3600); // half a second
    await expect(new MockActivityEnvironment().run(short.deliverWebhookEvents, { subscriptionId: row.id })).rejects.toThrow(/answered 500/);
    expect((await findWebhook(sql, row.id))!).toMatchObject({ status: 'active', cursor: row.cursor, last_error: 'the receiver answered 500' });
    await new Promise((r) => setTimeout(r, 600));
    const ended = await new MockActivityEnvironment().run(short.deliverWebhookEvents, { subscriptionId: row.id });
    expect(ended).toMatchObject({ status: 'ended', ended: 'disabled' });
    const after = (await findWebhook(sql, row.id))!;
    expect(after.status).toBe('disabled');
    expect(after.disabled_reason).toMatch(/answered 500/);
    const attempts = await listDeliveries(sql, row.id, 10);
    expect(attempts.map((a) => [a.event_id, a.attempt, a.ok, a.status_code])).toEqual([
      [id, 2, false, 500],
      [id, 1, false, 500],
    ]);
    const told = await listEventsFor(sql, owner, id, 10);
    expect(told.map((e) => [e.type, e.subject])).toEqual([['webhook.disabled', row.id]]);
    // the workflow's next look ends it
    expect(await new MockActivityEnvironment().run(short.deliverWebhookEvents, { subscriptionId: row.id })).toMatchObject({ status: 'ended', ended: 'disabled' });
  });
});
