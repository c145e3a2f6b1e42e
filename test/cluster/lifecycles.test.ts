// Every lifecycle kind once through each API instance of the production topology (the Temporal server
// on PostgreSQL persistence and SQL visibility, two workers, two APIs, one Redis): passport issuance,
// upgrade and revoke, agent registration, an A2A message, a task with escrow through completion and one
// through cancel (each then found by its TaskStatus in SQL visibility), domain ownership (challenge,
// published, DID-signed verify-ownership) and an on-chain attestation by the proven owner. Everything over HTTP, as clients do it.
// The workers and the two APIs run as production (encrypted payloads, issue 26 item 5); the trust flows go
// through a third API run as test, because their web site and DNS answers are on loopback, which only the
// SSRF guard's off switches reach and production refuses those (test/cluster/stack.ts trustApiUrl).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { AgentHttp, settled, until, type Json } from './agentHttp.js';
import { startClusterApp, type ClusterApp } from './stack.js';

let app: ClusterApp;
beforeAll(async () => {
  app = await startClusterApp({ prefix: 'lifecycles', workers: 2, evm: true, trustDomains: 2, log: (l) => console.log(l) });
});
afterAll(async () => {
  await app?.stop();
});

/** the workflows of one namespace whose visibility query matches, as the Web UI lists them */
async function visible(query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of app.client.workflow.list({ query })) ids.push(wf.workflowId);
  return ids;
}

describe('every lifecycle kind through each API instance (Temporal server on PostgreSQL, two workers, two APIs)', () => {
  for (const instance of [0, 1]) {
    it(`through API ${instance + 1}`, async () => {
      const cfg = app.ledger.localnet.config;
      const [holderAgent, otherAgent, thirdAgent] = cfg.accounts.slice(instance * 3, instance * 3 + 3);
      const base = app.apiUrl(instance);
      // straight to one instance; its challenges name the public origin (the entry point's), which the agents expect
      const holder = new AgentHttp(base, holderAgent!, cfg.node, app.entry.url);
      const other = new AgentHttp(base, otherAgent!, cfg.node, app.entry.url);
      const third = new AgentHttp(base, thirdAgent!, cfg.node, app.entry.url);
      const holderTrust = new AgentHttp(app.trustApiUrl!, holderAgent!, cfg.node, app.entry.url);
      const passportOf = (h: AgentHttp, tier?: string) => async () => {
        const r = await h.get(`/passport/address/${h.agent.accountId}`);
        return (r.body.passports as Json[] | undefined)?.find((p) => p.active && (!tier || p.tier === tier));
      };
      const taskIs = (taskId: string, status: string) => async () => {
        const r = await holder.get(`/market/tasks/${taskId}`);
        return r.body.status === status ? r.body : undefined;
      };

      // passport issuance (x402), upgrade (x402, the difference), a second passport, a revoked one
      const bought = await settled(await holder.paidPost('/passport/request', { tier: 'bronze' }), 'issuance', passportOf(holder));
      expect(bought).toMatchObject({ tier: 'bronze' });
      const { tokenId, serialNumber } = bought as { tokenId: string; serialNumber: number };
      const up = await settled(await holder.paidPost(`/passport/${tokenId}/${serialNumber}/upgrade`, { did: holder.agent.did, tier: 'gold' }), 'upgrade', passportOf(holder, 'gold'));
      expect(up.tier ?? up.newTier).toBe('gold');
      expect(await settled(await other.paidPost('/passport/request', { tier: 'gold' }), 'issuance', passportOf(other))).toMatchObject({ tier: 'gold' });
      const doomed = await settled(await third.paidPost('/passport/request', { tier: 'bronze' }), 'issuance', passportOf(third));
      const revoked = await third.post('/admin/revoke', { tokenId: doomed.tokenId, serial: doomed.serialNumber, reason: 'cluster test' }, { authorization: `Bearer ${app.adminToken}` });
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
      expect(revoked.body).toMatchObject({ revoked: true, did: third.agent.did });

      // agent registration
      const reg = await holder.signedPost('/agents/register', { did: holder.agent.did, name: `Cluster bot ${instance + 1}`, capabilities: ['data_consume', 'api_call'], endpoint: `https://bot${instance + 1}.example.com/a2a` });
      await settled(reg, 'registration', async () => ((await holder.get(`/agents/${encodeURIComponent(holder.agent.did)}`)).status === 200 ? {} : undefined));
      expect((await holder.get(`/agents/${encodeURIComponent(holder.agent.did)}`)).body).toMatchObject({ did: holder.agent.did, name: `Cluster bot ${instance + 1}` });

      // an A2A message, signed with the sender's key in memory
      const text = `hello from API ${instance + 1}`;
      const sent = await holder.post('/a2a/send-with-key', { from: holder.agent.did, to: other.agent.did, body: text, senderPrivateKey: holder.agent.privateKey });
      expect([200, 202], JSON.stringify(sent.body)).toContain(sent.status); // 202: still on its way; the inbox shows it
      await until('the message in the inbox', async () => {
        const inbox = await other.get(`/a2a/inbox?did=${encodeURIComponent(other.agent.did)}`);
        return (inbox.body.messages as Json[] | undefined)?.find((m) => m.body === text);
      });

      // a task with escrow through completion
      const posted = await holder.post('/market/tasks/signed', { posterDid: holder.agent.did, posterPrivateKey: holder.agent.privateKey, title: `cluster task ${instance + 1}`, priceHbar: 2 });
      expect(posted.status, JSON.stringify(posted.body)).toBe(200);
      expect(posted.body).toMatchObject({ status: 'posted', escrowStatus: 'funded' });
      const taskId = String(posted.body.taskId);
      await settled(await other.post(`/market/tasks/${taskId}/claim-with-key`, { claimerDid: other.agent.did, claimerPrivateKey: other.agent.privateKey }), 'claim', taskIs(taskId, 'claimed'));
      await settled(await other.post(`/market/tasks/${taskId}/deliver-with-key`, { claimerDid: other.agent.did, claimerPrivateKey: other.agent.privateKey, resultBody: 'done' }), 'deliver', taskIs(taskId, 'delivered'));
      const done = await settled(await holder.post(`/market/tasks/${taskId}/complete-with-key`, { posterDid: holder.agent.did, posterPrivateKey: holder.agent.privateKey }), 'complete', taskIs(taskId, 'completed'));
      expect(done.status).toBe('completed');
      expect(done.paymentTxId).toMatch(/^0\.0\.\d+@/);

      // a task with escrow through cancel
      const second = await holder.post('/market/tasks/signed', { posterDid: holder.agent.did, posterPrivateKey: holder.agent.privateKey, title: `cluster task ${instance + 1} (cancelled)`, priceHbar: 1.5 });
      expect(second.status, JSON.stringify(second.body)).toBe(200);
      const cancelledId = String(second.body.taskId);
      const cancelled = await settled(await holder.signedPost(`/market/tasks/${cancelledId}/cancel`, { posterDid: holder.agent.did }), 'cancel', taskIs(cancelledId, 'cancelled'));
      expect(cancelled).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded' });

      // both found by TaskStatus in SQL visibility (eventually consistent: polled)
      expect(await until('the completed task in visibility', async () => ((await visible(`TaskStatus = 'completed' AND WorkflowId = '${taskWorkflowId(taskId)}'`)).length === 1 ? true : undefined))).toBe(true);
      expect(await until('the cancelled task in visibility', async () => ((await visible(`TaskStatus = 'cancelled' AND WorkflowId = '${taskWorkflowId(cancelledId)}'`)).length === 1 ? true : undefined))).toBe(true);
      const mine = await visible(`PosterDid = '${holder.agent.did}' AND TaskStatus IN ('completed', 'cancelled')`);
      expect(mine.sort()).toEqual([taskWorkflowId(taskId), taskWorkflowId(cancelledId)].sort());

      // domain ownership (through the trust API): a challenge (starts no work), published, then a DID-signed
      // verify-ownership that checks once. First pass: bound to the holder's DID, the token in a DNS TXT
      // record; second: unbound, its digest in the well-known file, the token claimed by the holder's signed verify
      const domain = app.domains[instance]!;
      const bound = instance === 0;
      const ch = await holderTrust.get(`/api/trust/${domain}/challenge${bound ? `?did=${encodeURIComponent(holder.agent.did)}` : ''}`);
      expect(ch.status, JSON.stringify(ch.body)).toBe(200);
      if (bound) app.dns!.setTxt(`_agent-passport.${domain}`, [String(ch.body.well_known_content)]);
      else app.site!.files.set('/.well-known/agent-passport-challenge.txt', `${ch.body.well_known_content}\n`);
      expect(String(ch.body.well_known_content).includes(String(ch.body.token))).toBe(bound);
      const proven = await holderTrust.signedPost(`/api/trust/${domain}/verify-ownership`, { did: holder.agent.did, token: ch.body.token });
      expect(proven.status, JSON.stringify(proven.body)).toBe(200);
      expect(proven.body).toMatchObject({ domain, verified: true, domain_ownership: { method: bound ? 'dns' : 'well-known', verified: true, verified_by: holder.agent.did } });

      // an on-chain attestation of the domain's trust snapshot by the passport holder
      const attest = await holderTrust.signedPost(`/api/trust/${domain}/attest`, { did: holder.agent.did });
      const snap = await settled(attest, 'attestation', async () => {
        const s = await holderTrust.get(`/api/trust/${domain}`);
        return s.body.on_chain ? s.body : undefined;
      });
      expect(snap.on_chain).toMatchObject({ chain: 'eip155', attested_by: holder.agent.did, revoked: false });
      expect(snap.on_chain.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    });
  }

  it('both APIs answered, and the workers ran the workflows on the one task queue', async () => {
    const closed = await visible(`TaskQueue = '${app.taskQueue}' AND ExecutionStatus = 'Completed'`);
    expect(closed.length).toBeGreaterThan(0);
    for (const w of app.workers) expect(w.output()).toContain(`worker polling task queue ${app.taskQueue}`);
  });
});
