// The agent directory end to end over HTTP: real DID signatures, passports bought with a real
// x402 client, the agentRegistration and directoryRebuild workflows on a Temporal worker, the
// directory and audit topics read back through localnet's mirror, and a second API instance (own
// PostgreSQL pool, own LISTEN connection) that must see every change within a second or so.
import http from 'node:http';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { AccountId, NftId, TokenId, TransferTransaction } from '@hashgraph/sdk';
import { createSql, type Sql } from '../../db/client.js';
import { findAgent, recordProbe } from '../../db/queries/agents.js';
import { createLedgerClient } from '../../ledger/client.js';
import { freezeAccount } from '../../ledger/operations.js';
import { parseDirectoryMessage } from '../../domain/directory.js';
import { buildTestApp } from '../support/app.js';
import { signAgentCardAs, signedHeaders, type TestAgent } from '../support/signing.js';
import { eventually } from '../support/eventually.js';
import { ADMIN_TOKEN, getJson, paidPost, recordFixture, signedPost, startPassportStack, type PassportStack, buyPassport } from './passportHarness.js';

interface Instance {
  app: FastifyInstance;
  baseUrl: string;
}

async function json(res: Response) {
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe('agent directory end to end (register, list, revoke, rebuild; two API instances)', () => {
  let ps: PassportStack;
  let agents: TestAgent[];
  let b: Instance; // second API instance, TRUST_ALLOW_PRIVATE=true so it may fetch cards from 127.0.0.1
  let sqlB: Sql;
  let cards: http.Server;
  let cardBase = '';
  const passports = new Map<string, { tokenId: string; serialNumber: number }>();

  const register = async (target: 'a' | 'b', agent: TestAgent, body: Record<string, unknown>) => {
    if (target === 'a') return signedPost(ps, agent, '/agents/register', body);
    const headers = await signedHeaders(b.app, agent);
    return json(await fetch(`${b.baseUrl}/agents/register`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }));
  };
  const getB = async (path: string) => json(await fetch(`${b.baseUrl}${path}`));
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    ps = await startPassportStack('agents');
    await ps.startWorker();
    agents = ps.agents;

    const o = ps.sql.options as unknown as { host: string[]; port: number[]; database: string; user: string; pass: string | null };
    const url = `postgres://${encodeURIComponent(o.user)}${o.pass ? `:${encodeURIComponent(o.pass)}` : ''}@${o.host[0]}:${o.port[0]}/${o.database}`;
    sqlB = createSql(url, { max: 4 });
    const appB = await buildTestApp(
      {
        ...ps.stack.env,
        TEMPORAL_TASK_QUEUE: ps.t.taskQueue,
        RATE_LIMIT_MAX: '100000',
        ADMIN_TOKEN_SHA256: createHash('sha256').update(ADMIN_TOKEN).digest('hex'),
        TRUST_ALLOW_PRIVATE: 'true',
      },
      { sql: sqlB, ledger: ps.stack.ledger, temporal: async () => ps.t.client },
    );
    await appB.listen({ port: 0, host: '127.0.0.1' });
    b = { app: appB, baseUrl: `http://127.0.0.1:${(appB.server.address() as AddressInfo).port}` };

    // agent cards served locally: /card/<did> names that DID; /signed/<did> too, signed by that agent's account key (A2A v1.0 section 8.4)
    cards = http.createServer((req, res) => {
      const signed = req.url!.startsWith('/signed/');
      const did = decodeURIComponent(req.url!.replace(/^\/(card|signed)\//, ''));
      const card = { name: 'card', did, url: 'https://agent.example.com/a2a', version: '1.0' };
      const signer = agents.find((a) => a.did === did);
      void (signed && signer ? signAgentCardAs(signer, card) : Promise.resolve(card)).then((body) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
      );
    });
    await new Promise<void>((r) => cards.listen(0, '127.0.0.1', r));
    cardBase = `http://127.0.0.1:${(cards.address() as AddressInfo).port}/card/`;

    // passports: 0 bronze, 1 gold, 2 silver, 3 bronze, 4 bronze (revoked before it registers)
    const tiers = ['bronze', 'gold', 'silver', 'bronze', 'bronze'] as const;
    for (let i = 0; i < tiers.length; i++) {
      const r = await buyPassport(ps, agents[i], { tier: tiers[i] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      passports.set(agents[i].did, { tokenId: r.body.tokenId, serialNumber: r.body.serialNumber });
    }
  });
  afterAll(async () => {
    await b?.app.close();
    await sqlB?.end();
    cards?.closeAllConnections();
    await new Promise((r) => cards?.close(r));
    await ps?.stop();
  });

  it('registers an agent: the directory entry of SPEC 2, directory and audit messages on their topics', async () => {
    const agent = agents[0];
    const r = await register('a', agent, {
      did: agent.did,
      name: 'Weather Bot',
      capabilities: ['data_consume', 'api_call'],
      endpoint: 'https://weather.example.com/a2a',
      skills: ['Weather', 'search'],
      description: 'Forecasts',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const p = passports.get(agent.did)!;
    expect(r.body).toMatchObject({
      did: agent.did,
      tokenId: p.tokenId,
      serial: p.serialNumber,
      accountId: agent.accountId,
      name: 'Weather Bot',
      capabilities: ['api_call', 'data_consume'],
      endpoint: 'https://weather.example.com/a2a',
      tier: 'bronze',
      active: true,
      skills: ['Weather', 'search'],
    });
    expect(typeof r.body.timestamp).toBe('number');
    expect(r.body._links.self.href).toBe(`/agents/${encodeURIComponent(agent.did)}`);

    const { mirror, deployment } = ps.stack.ledger;
    const directory = (await mirror.getJoinedTopicMessages(deployment.topics.directory)).messages.map((m) => parseDirectoryMessage(m.text()));
    expect(directory).toEqual([
      expect.objectContaining({ v: 1, type: 'agent.registered', did: agent.did, name: 'Weather Bot', tokenId: p.tokenId, serial: p.serialNumber, timestamp: r.body.timestamp }),
    ]);
    const audit = (await mirror.getJoinedTopicMessages(deployment.topics.audit)).messages.map((m) => JSON.parse(m.text()));
    expect(audit).toContainEqual({ v: 1, type: 'agent.registered', did: agent.did, tokenId: p.tokenId, serial: p.serialNumber, tier: 'bronze', timestamp: r.body.timestamp });
    // and the passport's audit trail shows it
    const trail = await eventually(
      () => getJson(ps, `/audit/${p.tokenId}/${p.serialNumber}`),
      (x) => (x.body.events as { type: string }[] | undefined)?.some((e) => e.type === 'agent.registered') ?? false,
    );
    expect(trail.body.events).toContainEqual(expect.objectContaining({ type: 'agent.registered', did: agent.did, tokenId: p.tokenId, serial: p.serialNumber }));
    await recordFixture(ps, ps.workflowId(`agent:${agent.did}`), 'agentRegistration');
  });

  it('the registration is visible on the second instance (memory kept current by NOTIFY)', async () => {
    const r = await eventually(() => getB(`/agents/${encodeURIComponent(agents[0].did)}`), (x) => x.status === 200);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ did: agents[0].did, name: 'Weather Bot', active: true });
  });

  it('checks capabilities against the passport on the ledger: 400 agent_capability_invalid', async () => {
    const agent = agents[2]; // silver: api_call, data_consume, data_provide
    const outside = await register('a', agent, { did: agent.did, name: 'Silver', capabilities: ['api_call', 'payment'], endpoint: 'https://s.example.com' });
    expect([outside.status, outside.body.code]).toEqual([400, 'agent_capability_invalid']);
    const unknown = await register('a', agent, { did: agent.did, name: 'Silver', capabilities: ['fly'], endpoint: 'https://s.example.com' });
    expect([unknown.status, unknown.body.code]).toEqual([400, 'agent_capability_invalid']);
    const ok = await register('a', agent, { did: agent.did, name: 'Silver Search', capabilities: ['data_provide'], endpoint: 'https://s.example.com', skills: ['SEARCH'] });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ tier: 'silver', capabilities: ['data_provide'] });
  });

  it('fetches the agent card through the SSRF guard: own DID accepted, another DID 409, a private address refused by default', async () => {
    const agent = agents[1]; // gold
    const body = { did: agent.did, name: 'Gold Payer', capabilities: ['payment', 'api_call'], endpoint: 'https://gold.example.com/a2a', skills: ['payments'] };
    // instance A keeps the public-address rule: a card on 127.0.0.1 is not fetched
    const privateCard = await register('a', agent, { ...body, agentCard: `${cardBase}${encodeURIComponent(agent.did)}` });
    expect([privateCard.status, privateCard.body.code]).toEqual([400, 'invalid_request']);
    // instance B (TRUST_ALLOW_PRIVATE): a card naming someone else is a conflict
    const otherCard = await register('b', agent, { ...body, agentCard: `${cardBase}${encodeURIComponent(agents[0].did)}` });
    expect([otherCard.status, otherCard.body.code]).toEqual([409, 'policy_refusal']);
    // a card signed by the DID's account key (issue 29 item 5): the entry says verified, and online since the card answered
    const signedCard = `${cardBase.replace(/\/card\/$/, '/signed/')}${encodeURIComponent(agent.did)}`;
    const ok = await register('b', agent, { ...body, agentCard: signedCard });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ did: agent.did, tier: 'gold', capabilities: ['api_call', 'payment'], agentCard: signedCard, cardVerified: true, cardVerification: 'verified', online: true, stale: false });
    expect(typeof ok.body.lastSeenAt).toBe('number');
    // and instance A sees it
    const onA = await eventually(() => getJson(ps, `/agents/${encodeURIComponent(agent.did)}`), (x) => x.status === 200);
    expect(onA.body.name).toBe('Gold Payer');
    // its DID document names the card and its verification, on both instances (from the directory in memory)
    for (const get of [getB, (p: string) => getJson(ps, p)]) {
      const doc = await eventually(() => get(`/did/${agent.did}`), (x) => x.status === 200 && JSON.stringify(x.body).includes('A2AAgentCard'));
      expect(doc.body.service).toContainEqual({ id: `${agent.did}#agent-card`, type: 'A2AAgentCard', serviceEndpoint: signedCard, cardVerified: true, cardVerification: 'verified' });
    }
  });

  it('409 agent_already_registered for a DID or a name (case-insensitive) already in the directory', async () => {
    const again = await register('a', agents[0], { did: agents[0].did, name: 'Another Name', capabilities: ['api_call'], endpoint: 'https://w.example.com' });
    expect([again.status, again.body.code]).toEqual([409, 'agent_already_registered']);
    const sameName = await register('a', agents[3], { did: agents[3].did, name: 'WEATHER bot', capabilities: ['api_call'], endpoint: 'https://w.example.com' });
    expect([sameName.status, sameName.body.code]).toEqual([409, 'agent_already_registered']);
  });

  it('403 without a passport or with a revoked one; 401/403 for signature problems', async () => {
    const noPassport = await register('a', agents[5], { did: agents[5].did, name: 'Nobody', capabilities: ['api_call'], endpoint: 'https://n.example.com' });
    expect([noPassport.status, noPassport.body.code]).toEqual([403, 'passport_not_found']);

    const p4 = passports.get(agents[4].did)!;
    const revoke = await fetch(`${ps.baseUrl}/admin/revoke`, { method: 'POST', headers: { 'content-type': 'application/json', ...admin }, body: JSON.stringify({ tokenId: p4.tokenId, serial: p4.serialNumber }) });
    expect(revoke.status).toBe(200);
    const revoked = await register('a', agents[4], { did: agents[4].did, name: 'Revoked', capabilities: ['api_call'], endpoint: 'https://r.example.com' });
    expect([revoked.status, revoked.body.code]).toEqual([403, 'passport_not_found']);

    const unsigned = await fetch(`${ps.baseUrl}/agents/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ did: agents[3].did, name: 'x', capabilities: ['api_call'], endpoint: 'https://x.example.com' }) });
    expect([unsigned.status, ((await unsigned.json()) as { code: string }).code]).toEqual([401, 'auth_header_missing']);
    const otherDid = await register('a', agents[3], { did: agents[0].did, name: 'x', capabilities: ['api_call'], endpoint: 'https://x.example.com' });
    expect([otherDid.status, otherDid.body.code]).toEqual([403, 'auth_did_mismatch']);
    const badBody = await register('a', agents[3], { did: agents[3].did, name: 'x', capabilities: ['api_call'], endpoint: 'ftp://x.example.com', extra: 1 });
    expect([badBody.status, badBody.body.code]).toEqual([400, 'invalid_request']);
    // every field within its bound, but together over one topic message (1024 bytes)
    const skills = Array.from({ length: 20 }, (_, i) => `skill-${i}-${'s'.repeat(38)}`);
    const tooBig = await register('a', agents[3], { did: agents[3].did, name: 'Big', capabilities: ['api_call'], endpoint: 'https://big.example.com', skills, description: 'd'.repeat(500) });
    expect([tooBig.status, tooBig.body.code], JSON.stringify(tooBig.body)).toEqual([400, 'invalid_request']);
    expect(tooBig.body.error).toMatch(/bytes/);
  });

  it('403 passport_not_owned when the ledger shows the passport in another account', async () => {
    // agent 5 buys a passport; the service unfreezes it and agent 5 moves the NFT to agent 4 on the
    // ledger: the projection still names agent 5, the ledger's holder is agent 4.
    const mover = agents[5];
    const bought = await buyPassport(ps, mover, { tier: 'bronze' });
    expect(bought.status, JSON.stringify(bought.body)).toBe(200);
    const { tokenId, serialNumber } = bought.body as { tokenId: string; serialNumber: number };
    await freezeAccount(ps.stack.clients.client, { tokenId, accountId: mover.accountId, frozen: false });
    const client = createLedgerClient({ network: 'local', node: ps.stack.localnet.config.node, operator: { accountId: mover.accountId, privateKey: mover.privateKey } });
    try {
      const tx = new TransferTransaction().addNftTransfer(new NftId(TokenId.fromString(tokenId), serialNumber), AccountId.fromString(mover.accountId), AccountId.fromString(agents[4].accountId));
      const receipt = await (await (await tx.freezeWith(client).signWithOperator(client)).execute(client)).getReceipt(client);
      expect(receipt.status.toString()).toBe('SUCCESS');
    } finally {
      client.close();
    }
    await eventually(() => ps.stack.ledger.mirror.getNftHolder(tokenId, serialNumber), (h) => h === agents[4].accountId);
    const r = await register('a', mover, { did: mover.did, name: 'Mover', capabilities: ['api_call'], endpoint: 'https://m.example.com' });
    expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([403, 'passport_not_owned']);
  });

  it('a pending claim holds its name while young; one whose workflow never ran is released after a minute', async () => {
    const claim = (did: string, name: string, age: string) => ps.sql`
      insert into agents (did, network, account_id, token_id, serial, name, capabilities, endpoint, tier, status, workflow_id, created_at)
      values (${did}, 'local', '0.0.424242', '0.0.1', 1, ${name}, '[]'::jsonb, 'https://x.example.com', 'bronze', 'pending',
              ${`${did}/no-such-workflow`}, now() - ${age}::interval)`;
    await claim('did:hedera:local:0.0.424242', 'Young Claim', '0 seconds');
    await claim('did:hedera:local:0.0.434343', 'Short Lived', '2 minutes');
    const agent = agents[3];
    const young = await register('a', agent, { did: agent.did, name: 'young claim', capabilities: ['api_call'], endpoint: 'https://y.example.com' });
    expect([young.status, young.body.code]).toEqual([409, 'agent_already_registered']);
    // the stale claim of 'Short Lived' is released, so agent 3 can take the name in the next test
    await ps.sql`delete from agents where did = 'did:hedera:local:0.0.424242'`;
  });

  it('a revoked passport turns its entry inactive on every instance', async () => {
    const agent = agents[3];
    const r = await register('b', agent, { did: agent.did, name: 'Short Lived', capabilities: ['api_call'], endpoint: 'https://short.example.com', skills: ['search'] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const p = passports.get(agent.did)!;
    const revoke = await fetch(`${ps.baseUrl}/admin/revoke`, { method: 'POST', headers: { 'content-type': 'application/json', ...admin }, body: JSON.stringify({ tokenId: p.tokenId, serial: p.serialNumber }) });
    expect(revoke.status).toBe(200);
    const path = `/agents/${encodeURIComponent(agent.did)}`;
    const onA = await eventually(() => getJson(ps, path), (x) => x.body.active === false);
    const onB = await eventually(() => getB(path), (x) => x.body.active === false);
    expect([onA.status, onA.body.active, onB.status, onB.body.active]).toEqual([200, false, 200, false]);
  });

  it('an upgraded passport changes the tier of its entry on every instance', async () => {
    const agent = agents[2];
    const p = passports.get(agent.did)!;
    const up = await paidPost(ps, agent, `/passport/${p.tokenId}/${p.serialNumber}/upgrade`, { tier: 'gold' });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    const path = `/agents/${encodeURIComponent(agent.did)}`;
    const onA = await eventually(() => getJson(ps, path), (x) => x.body.tier === 'gold');
    const onB = await eventually(() => getB(path), (x) => x.body.tier === 'gold');
    expect([onA.body.tier, onB.body.tier, onA.body.capabilities]).toEqual(['gold', 'gold', ['data_provide']]);
  });

  it('documents the directory routes in the OpenAPI document', async () => {
    const r = await getJson(ps, '/openapi.json');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.paths)).toEqual(expect.arrayContaining(['/agents/register', '/agents', '/agents/{did}', '/admin/rebuild-cache']));
  });

  it('lists with each filter and pages: agents, count, total, limit, offset', async () => {
    const dids = (r: { body: Record<string, any> }) => (r.body.agents as { did: string }[]).map((a) => a.did);
    const all = await getJson(ps, '/agents');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ count: 4, total: 4, limit: 20, offset: 0 });
    // registration order: 0, 2, 1, 3
    expect(dids(all)).toEqual([agents[0].did, agents[2].did, agents[1].did, agents[3].did]);
    expect(all.body.agents[3]).toMatchObject({ name: 'Short Lived', active: false });

    const page = await getJson(ps, '/agents?limit=2&offset=1');
    expect(page.body).toMatchObject({ count: 2, total: 4, limit: 2, offset: 1 });
    expect(dids(page)).toEqual([agents[2].did, agents[1].did]);
    const past = await getJson(ps, '/agents?offset=10');
    expect(past.body).toMatchObject({ agents: [], count: 0, total: 4 });

    const payment = await getJson(ps, '/agents?capability=payment');
    expect([dids(payment), payment.body.total]).toEqual([[agents[1].did], 1]);
    const search = await getJson(ps, '/agents?skill=Search');
    expect(dids(search)).toEqual([agents[0].did, agents[2].did, agents[3].did]);
    const name = await getJson(ps, '/agents?name=BOT');
    expect(dids(name)).toEqual([agents[0].did]);
    const combined = await getJson(ps, '/agents?skill=search&capability=api_call&limit=1&offset=1');
    expect(combined.body).toMatchObject({ count: 1, total: 2 });
    expect(dids(combined)).toEqual([agents[3].did]);

    for (const bad of ['/agents?capability=fly', '/agents?limit=101', '/agents?limit=0', '/agents?offset=-1', '/agents?colour=red']) {
      const r = await getJson(ps, bad);
      expect([bad, r.status, r.body.code]).toEqual([bad, 400, 'invalid_request']);
    }
    // the second instance answers the same
    const onB = await getB('/agents?skill=Search');
    expect(dids(onB)).toEqual(dids(search));
  });

  it('404 agent_not_found for a DID that is not in the directory', async () => {
    const r = await getJson(ps, `/agents/${encodeURIComponent('did:hedera:local:0.0.999999')}`);
    expect([r.status, r.body.code]).toEqual([404, 'agent_not_found']);
    const revokedNeverRegistered = await getJson(ps, `/agents/${encodeURIComponent(agents[4].did)}`);
    expect(revokedNeverRegistered.status).toBe(404);
  });

  it('rebuild-cache after emptying the projection gives the same entries on every instance; a concurrent call attaches', async () => {
    const before = (await getJson(ps, '/agents')).body.agents;
    // empty the projection and let every instance reload it: the directory is gone everywhere
    await ps.sql`delete from agents`;
    await ps.sql`select pg_notify('agent_changed', '*')`;
    const emptyA = await eventually(() => getJson(ps, '/agents'), (x) => x.body.total === 0);
    const emptyB = await eventually(() => getB('/agents'), (x) => x.body.total === 0);
    expect([emptyA.body.total, emptyB.body.total]).toEqual([0, 0]);

    const noToken = await fetch(`${ps.baseUrl}/admin/rebuild-cache`, { method: 'POST' });
    expect(noToken.status).toBe(401);
    const [r1, r2] = await Promise.all([
      json(await fetch(`${ps.baseUrl}/admin/rebuild-cache`, { method: 'POST', headers: admin })),
      json(await fetch(`${b.baseUrl}/admin/rebuild-cache`, { method: 'POST', headers: admin })),
    ]);
    expect(r1.status, JSON.stringify(r1.body)).toBe(200);
    expect(r1.body).toMatchObject({ rebuilt: true, messages: 4, registrations: 4, agents: 4, active: 3, skipped: 0 });
    expect(r2.status).toBe(200);
    expect(r2.body).toMatchObject({ agents: 4, active: 3 });

    const [{ n }] = await ps.sql<{ n: bigint }[]>`select count(*)::bigint as n from agents where status = 'registered'`;
    expect(Number(n)).toBe(4);
    // what probes found (liveness, card verification) is not on the topic: with the projection emptied it
    // is known again after the next probe, and the card says so meanwhile
    const fromTopic = (list: Record<string, unknown>[]) => list.map(({ online: _o, lastSeenAt: _l, stale: _s, cardVerified: _c, cardVerification: _v, ...rest }) => rest);
    const afterA = await eventually(() => getJson(ps, '/agents'), (x) => JSON.stringify(fromTopic(x.body.agents)) === JSON.stringify(fromTopic(before)));
    const afterB = await eventually(() => getB('/agents'), (x) => JSON.stringify(fromTopic(x.body.agents)) === JSON.stringify(fromTopic(before)));
    expect(fromTopic(afterA.body.agents)).toEqual(fromTopic(before));
    expect(fromTopic(afterB.body.agents)).toEqual(fromTopic(before));
    expect(afterA.body.agents.find((a: { name: string }) => a.name === 'Gold Payer')).toMatchObject({ online: null, cardVerified: false, cardVerification: 'not_checked' });
    await recordFixture(ps, ps.workflowId('directory-rebuild'), 'directoryRebuild');

    // a registration recorded after the rebuild read the topic (a later sequence number) survives it
    await ps.sql`
      insert into agents (did, network, account_id, token_id, serial, name, capabilities, endpoint, tier, registered_at, status, directory_sequence)
      values ('did:hedera:local:0.0.454545', 'local', '0.0.454545', '0.0.1', 99, 'Late Comer', '["api_call"]'::jsonb, 'https://l.example.com',
              'bronze', now(), 'registered', 1000000)`;
    // what a probe found about a replayed entry (not on the topic) is kept by a rebuild that replaces its row
    const gold = agents[1].did;
    await recordProbe(ps.sql, { did: gold, online: true, staleAfterMs: 86_400_000, card: { cardVerified: true, cardVerification: 'verified' } });
    const probed = (await findAgent(ps.sql, gold))!;
    const again = await json(await fetch(`${ps.baseUrl}/admin/rebuild-cache`, { method: 'POST', headers: admin }));
    expect(again.body).toMatchObject({ agents: 4, active: 4 }); // 4 replayed; active counts the whole directory (3 + the late one)
    const rebuilt = (await findAgent(ps.sql, gold))!;
    expect(rebuilt.directory_sequence).toBe(probed.directory_sequence);
    expect({ online: rebuilt.online, lastSeenAt: rebuilt.last_seen_at, cardVerified: rebuilt.card_verified, cardVerification: rebuilt.card_verification }).toEqual({
      online: true,
      lastSeenAt: probed.last_seen_at,
      cardVerified: true,
      cardVerification: 'verified',
    });
    const [{ late }] = await ps.sql<{ late: bigint }[]>`select count(*)::bigint as late from agents where did = 'did:hedera:local:0.0.454545'`;
    expect(Number(late)).toBe(1);
    await ps.sql`delete from agents where did = 'did:hedera:local:0.0.454545'`;
  });
});
