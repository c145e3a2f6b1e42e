// Events out (issue 28; DESIGN 12 "Events out") on a real stack: localnet, the real worker process
// (worker/index.ts: the webhookDelivery workflows, their activity and the waker), the API over HTTP.
// Three agents with passports subscribe their own HTTP receivers; the poster's receiver answers 500 to
// its first deliveries; tasks go through completion and cancellation while the worker is SIGKILLed.
// Every receiver gets exactly its audience's events, in id order, each verifying with the
// `standardwebhooks` package; the pull endpoint returns the same events; a long-poll ends with the
// event that occurred while it waited.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { databaseUrlOf, startChildWorker, type ChildWorker } from '../reliability/childWorker.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { recordSecret } from '../support/secrets.js';
import { buyPassport, getJson, postJson, startPassportStack, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;

interface Receiver {
  url: string;
  /** verified deliveries in arrival order (retries included) */
  got: { id: string; type: string; subject: string; data: Json }[];
  /** requests answered 500 so far */
  refused: number;
  secret?: string;
  close(): Promise<void>;
}

/** An agent's webhook receiver: verifies each delivery with standardwebhooks, answers 500 to the first `failFirst`. */
async function startReceiver(failFirst = 0): Promise<Receiver> {
  const r: Receiver = { url: '', got: [], refused: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (r.refused < failFirst) {
        r.refused++;
        res.writeHead(500).end('not yet');
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const ev = new Webhook(r.secret!).verify(body, req.headers as Record<string, string>) as Json;
        expect(req.headers['webhook-id']).toBe(ev.id);
        r.got.push({ id: ev.id, type: ev.type, subject: ev.subject, data: ev.data });
        res.writeHead(204).end();
      } catch {
        res.writeHead(400).end('bad signature');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  r.close = () => new Promise((resolve) => server.close(() => resolve()));
  return r;
}

/** First delivery of each event id, in arrival order (a retry after a kill may repeat one). */
const firstOf = (got: Receiver['got']) => {
  const seen = new Set<string>();
  return got.filter((e) => (seen.has(e.id) ? false : (seen.add(e.id), true)));
};

const TASK_TYPES = ['task.posted', 'task.claimed', 'task.delivered', 'task.verified', 'task.completed', 'task.cancelled', 'task.expired', 'task.released', 'task.reward_increased'];

describe('events out: webhooks and pull', () => {
  let ps: PassportStack;
  let env: Record<string, string>;
  const workers: ChildWorker[] = [];
  let poster: TestAgent;
  let claimer: TestAgent;
  let other: TestAgent;
  const receivers: Receiver[] = [];

  const signed = async (path: string, signer: TestAgent, body: unknown) => postJson(ps, path, body, await signedHeaders(ps.app, signer));
  const signedGet = async (path: string, reader: TestAgent) => {
    const res = await fetch(`${ps.baseUrl}${path}`, { headers: await signedHeaders(ps.app, reader) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const until = async <T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 120_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await probe();
      if (v) return v;
      if (Date.now() > end) throw new Error(`${what}: not reached`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const taskStatus = (taskId: string, status: string) => until(`task ${taskId} ${status}`, async () => (await getJson(ps, `/market/tasks/${taskId}`)).body.status === status);
  /** the events the log holds for a subscription of `did` (optionally with capability filter), task types only, in id order */
  const expectedFor = async (did: string, caps: string[] = []) =>
    (
      await ps.sql<{ id: string }[]>`
        select id from events where type = any(${TASK_TYPES}::text[])
           and (audience @> ${[did]}::text[] or (${caps.length > 0} and type in ('task.posted', 'task.released') and capabilities && ${caps}::text[]))
         order by id`
    ).map((r) => r.id);

  beforeAll(async () => {
    ps = await startPassportStack('events');
    ps.app.market.settings.workflowWaitMs = 60_000;
    env = {
      ...ps.stack.env,
      DATABASE_URL: databaseUrlOf(ps.sql),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: ps.t.taskQueue,
      WORKFLOW_ID_SCOPE: ps.state.workflowIdScope!,
      // the receivers listen on 127.0.0.1 (NODE_ENV=test: the SSRF guard's test switch)
      TRUST_ALLOW_PRIVATE: 'true',
    };
    workers.push(await startChildWorker(env));
    [poster, claimer, other] = ps.agents as [TestAgent, TestAgent, TestAgent];
    for (const a of [poster, claimer, other]) {
      const r = await buyPassport(ps, a, { tier: 'gold' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
  }, 400_000);
  afterAll(async () => {
    for (const w of workers) await w.kill('SIGKILL');
    for (const r of receivers) await r.close();
    await ps?.stop();
  });

  it('POST /webhooks checks its caller and its URL, answers the secret once, and is bounded per DID', async () => {
    const unsigned = await postJson(ps, '/webhooks', { url: 'https://example.com/hook', events: ['task.posted'] });
    expect(unsigned.status).toBe(401);
    const ftp = await signed('/webhooks', poster, { url: 'ftp://example.com/hook', events: ['task.posted'] });
    expect(ftp.status).toBe(400);
    expect(ftp.body.code).toBe('invalid_request');
    const unknownType = await signed('/webhooks', poster, { url: 'https://example.com/hook', events: ['task.exploded'] });
    expect(unknownType.status).toBe(400);
    // an agent without a passport
    const stranger = ps.agents[5]!;
    const noPassport = await signed('/webhooks', stranger, { url: 'https://example.com/hook', events: ['task.posted'] });
    expect(noPassport.status).toBe(404);
    expect(noPassport.body.code).toBe('passport_not_found');
  });

  it('delivers every event of its audience, in order, signed, through a failing receiver and a SIGKILLed worker; pull returns the same', { timeout: 600_000 }, async () => {
    const posterHook = await startReceiver(2);
    const claimerHook = await startReceiver();
    const otherHook = await startReceiver();
    receivers.push(posterHook, claimerHook, otherHook);
    const subscribe = async (agent: TestAgent, r: Receiver, capabilities?: string[]) => {
      const res = await signed('/webhooks', agent, { url: r.url, events: TASK_TYPES, ...(capabilities ? { capabilities } : {}) });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      recordSecret('webhook secret', res.body.secret); // the secrets scan checks it is stored nowhere in clear
      r.secret = res.body.secret;
      return res.body.id as string;
    };
    const posterHookId = await subscribe(poster, posterHook);
    await subscribe(claimer, claimerHook, ['translate']);
    await subscribe(other, otherHook);
    // the list shows them without their secrets
    const listed = await signedGet('/webhooks', poster);
    expect(listed.status).toBe(200);
    expect(listed.body.webhooks).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(posterHook.secret!);

    // task 1: posted (translate), claimed, then the worker is killed while the poster's receiver still fails
    const t1 = await signed('/market/tasks/signed', poster, { posterDid: poster.did, title: 'Translate a page', priceHbar: 1, capabilities: ['translate'], posterPrivateKey: poster.privateKey });
    expect(t1.status, JSON.stringify(t1.body)).toBe(200);
    const task1 = String(t1.body.taskId);
    expect((await signed(`/market/tasks/${task1}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    await until('the poster receiver refused twice', async () => posterHook.refused >= 2);
    await workers[0]!.kill('SIGKILL');
    workers.push(await startChildWorker(env));
    const d = await signed(`/market/tasks/${task1}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'la page' });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    await taskStatus(task1, 'delivered');
    const done = await signed(`/market/tasks/${task1}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await taskStatus(task1, 'completed');
    // task 2: posted without the claimer's capability, then cancelled
    const t2 = await signed('/market/tasks/signed', poster, { posterDid: poster.did, title: 'Summarise', priceHbar: 1, capabilities: ['summarise'], posterPrivateKey: poster.privateKey });
    expect(t2.status, JSON.stringify(t2.body)).toBe(200);
    const task2 = String(t2.body.taskId);
    expect((await signed(`/market/tasks/${task2}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
    await taskStatus(task2, 'cancelled');

    // every receiver ends with exactly its audience's events, in id order
    const posterWant = await expectedFor(poster.did);
    const claimerWant = await expectedFor(claimer.did, ['translate']);
    expect(posterWant.length).toBeGreaterThanOrEqual(6); // t1 posted, claimed, delivered, completed; t2 posted, cancelled
    await until('the poster receiver has its events', async () => firstOf(posterHook.got).length >= posterWant.length);
    await until('the claimer receiver has its events', async () => firstOf(claimerHook.got).length >= claimerWant.length);
    expect(firstOf(posterHook.got).map((e) => e.id)).toEqual(posterWant);
    expect(firstOf(claimerHook.got).map((e) => e.id)).toEqual(claimerWant);
    const posterTypes = firstOf(posterHook.got).filter((e) => e.subject === task1).map((e) => e.type);
    expect(posterTypes).toEqual(expect.arrayContaining(['task.posted', 'task.claimed', 'task.delivered', 'task.completed']));
    expect(firstOf(posterHook.got).filter((e) => e.subject === task2).map((e) => e.type)).toEqual(['task.posted', 'task.cancelled']);
    // the claimer saw task 1 posted (its capability) but nothing of task 2; nobody saw the result body
    expect(firstOf(claimerHook.got).some((e) => e.subject === task2)).toBe(false);
    expect(JSON.stringify([...posterHook.got, ...claimerHook.got])).not.toContain('la page');
    // the third agent is neither a party nor subscribed by capability: it was told nothing
    expect(otherHook.got).toEqual([]);

    // the deliveries list shows the refused attempts and the retries of the same event id
    const deliveries = await signedGet(`/webhooks/${posterHookId}/deliveries`, poster);
    expect(deliveries.status).toBe(200);
    const failed = deliveries.body.deliveries.filter((x: Json) => !x.ok);
    expect(failed.length).toBeGreaterThanOrEqual(2);
    expect(failed[0].statusCode).toBe(500);
    expect(deliveries.body.deliveries.some((x: Json) => x.ok && x.eventId === failed[0].eventId)).toBe(true);
    // another DID cannot read it
    expect((await signedGet(`/webhooks/${posterHookId}/deliveries`, claimer)).status).toBe(404);

    // pull: the same events, the same bodies, the same order
    const pulled = await signedGet(`/agents/${encodeURIComponent(poster.did)}/events`, poster);
    expect(pulled.status, JSON.stringify(pulled.body)).toBe(200);
    const pulledTask = (pulled.body.events as Json[]).filter((e) => TASK_TYPES.includes(e.type));
    expect(pulledTask.map((e) => e.id)).toEqual(posterWant);
    expect(pulledTask[0]).toEqual({ ...firstOf(posterHook.got)[0], timestamp: pulledTask[0]!.timestamp });
    expect((pulled.body.events as Json[]).some((e) => e.type === 'passport.issued')).toBe(true);
    // only the DID itself may pull its events
    const foreign = await signedGet(`/agents/${encodeURIComponent(poster.did)}/events`, claimer);
    expect(foreign.status).toBe(403);
  });

  it('a long-poll ends with the event that occurs while it waits', { timeout: 240_000 }, async () => {
    const head = await signedGet(`/agents/${encodeURIComponent(poster.did)}/events?limit=100`, poster);
    let cursor: string = head.body.next;
    for (let page = head.body; page.events.length === 100; ) {
      page = (await signedGet(`/agents/${encodeURIComponent(poster.did)}/events?after=${cursor}&limit=100`, poster)).body;
      cursor = page.next;
    }
    const started = Date.now();
    const waiting = signedGet(`/agents/${encodeURIComponent(poster.did)}/events?after=${cursor}&wait=30`, poster);
    await until('the request waits', async () => ps.app.events.waiting === 1);
    const t3 = await signed('/market/tasks/signed', poster, { posterDid: poster.did, title: 'Third', priceHbar: 1, posterPrivateKey: poster.privateKey });
    expect(t3.status, JSON.stringify(t3.body)).toBe(200);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body.events[0]).toMatchObject({ type: 'task.posted', subject: t3.body.taskId });
    expect(answer.body.next).toBe(answer.body.events.at(-1).id);
    // it answered when the event came, not at the end of its 30 s
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(ps.app.events.waiting).toBe(0);
  });

  it('DELETE /webhooks/{id} removes it (and only the owner can)', async () => {
    const listed = await signedGet('/webhooks', claimer);
    const id = listed.body.webhooks[0].id as string;
    const foreign = await fetch(`${ps.baseUrl}/webhooks/${id}`, { method: 'DELETE', headers: await signedHeaders(ps.app, poster) });
    expect(foreign.status).toBe(404);
    const own = await fetch(`${ps.baseUrl}/webhooks/${id}`, { method: 'DELETE', headers: await signedHeaders(ps.app, claimer) });
    expect(own.status).toBe(204);
    expect((await signedGet('/webhooks', claimer)).body.webhooks).toEqual([]);
    // its workflow ends
    await until('the delivery workflow ends', async () => {
      const d = await ps.t.client.workflow.getHandle(ps.workflowId(`webhook:${id}`)).describe();
      return d.status.name === 'COMPLETED';
    });
  });
});
