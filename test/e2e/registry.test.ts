// Registry keys end to end against localnet, the Temporal worker and PostgreSQL: a sponsored
// registration's sponsoredRegistration workflow writes the registry.sponsored record to the
// directory topic, paid by the operator (read back through the mirror; never the key), the record
// on /api/v1/agents/me follows; the directory rebuild is not disturbed by it; WebFinger for a DID
// with a real passport links to a DID document and a passport that both answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDirectoryMessage } from '../../domain/directory.js';
import path from 'node:path';
import { replayHistoryFile } from '../support/temporal.js';
import { getJson, historiesDir, recordFixture, signedPost, startPassportStack, workflowsPath, type PassportStack, buyPassport } from './passportHarness.js';
import { eventually } from '../support/eventually.js';


describe('registry keys end to end (localnet, worker, PostgreSQL)', () => {
  let ps: PassportStack;

  beforeAll(async () => {
    ps = await startPassportStack('registry');
    await ps.startWorker();
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('a sponsored registration writes registry.sponsored to the directory topic, paid by the operator', async () => {
    const owner = ps.agents[0]!.did;
    // signed by the owner: only then is the owner recorded and the record sponsored (issue 20 item 8)
    const res = await signedPost(ps, ps.agents[0]!, '/api/v1/agents/register', { name: 'sponsored-bot', owner });
    expect(res.status).toBe(200);
    const reg = res.body;
    expect(reg).toMatchObject({ name: 'sponsored-bot', owner, sponsored: true, status: 'active', directory_record: { status: 'pending' } });
    const key = reg.api_key as string;

    const me = await eventually(
      () => getJson(ps, '/api/v1/agents/me', { authorization: `Bearer ${key}` }),
      (r) => r.body.directory_record?.status === 'written',
      60_000,
      200,
    );
    expect(me.status).toBe(200);
    const record = me.body.directory_record;
    expect(record.status).toBe('written');
    expect(record.sequence_number).toBeGreaterThan(0);
    expect(record.transaction_id).toMatch(/^\d+\.\d+\.\d+@\d+\.\d+$/);

    const { mirror, deployment } = ps.stack.ledger;
    const messages = await eventually(
      async () => (await mirror.getJoinedTopicMessages(deployment.topics.directory)).messages,
      (list) => list.some((m) => m.sequenceNumber === record.sequence_number),
      60_000,
      200,
    );
    const written = messages.find((m) => m.sequenceNumber === record.sequence_number)!;
    const text = written.text();
    expect(JSON.parse(text)).toEqual({ v: 1, type: 'registry.sponsored', id: reg.id, name: 'sponsored-bot', owner, timestamp: Date.parse(reg.created_at) });
    expect(text).not.toContain(key.slice(4));
    // the service paid: the transaction's payer is the operator
    expect(record.transaction_id.split('@')[0]).toBe(deployment.operator.accountId);
    // the agent directory reads agent.registered messages only
    expect(parseDirectoryMessage(text)).toBeNull();

    await recordFixture(ps, ps.workflowId(`registry-sponsored:${reg.id}`), 'sponsoredRegistration');
  });

  it('WebFinger for a DID with a real passport: the DID document and passport links answer', async () => {
    const agent = ps.agents[1]!;
    const bought = await buyPassport(ps, agent, { tier: 'bronze' });
    expect(bought.status, JSON.stringify(bought.body)).toBe(200);
    const r = await eventually(
      () => getJson(ps, `/.well-known/webfinger?resource=${encodeURIComponent(agent.did)}`),
      (x) => x.status === 200,
      10_000,
    );
    expect(r.status).toBe(200);
    expect(r.body.subject).toBe(agent.did);
    const rels = r.body.links.map((l: { rel: string }) => l.rel);
    expect(rels).toEqual(['describedby', 'urn:agent-passport:rel:passport']);
    for (const link of r.body.links as { href: string }[]) {
      const res = await fetch(link.href);
      expect(res.status, link.href).toBe(200);
    }
    const passport = (await (await fetch(r.body.links[1].href)).json()) as { tokenId: string };
    expect(passport.tokenId).toBe(bought.body.tokenId);
  });

  it('the recorded sponsoredRegistration history replays against the current workflow code', async () => {
    await expect(replayHistoryFile(path.join(historiesDir, 'sponsoredRegistration.history.bin'), workflowsPath, 'sponsoredRegistration')).resolves.toBeUndefined();
  });
});
