// On-chain attestation of trust snapshots end to end: a passport bought over x402 on localnet, the
// test domain served on a loopback port (TRUST_ALLOW_PRIVATE, a local DNS server), anvil with the
// passport contract, the trustAttest workflow and the chain indexer on the Temporal dev server.
// Checks: 401, 404 and 403 (no proven ownership by the signer) refusals, the snapshot with on_chain,
// the attestation on the contract, the DomainAttested event at GET /events, one transaction per
// snapshot hash (repeated, concurrent, and a retried activity whose recorded transaction was never
// sent), the 202's Location answering GET with the attestation's state, the per-DID daily quota.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { WorkflowHandle } from '@temporalio/client';
import { encodeFunctionData, getAddress, keccak256, type Hex } from 'viem';
import { agentPassportAbi } from '../../evm/abis.js';
import { createEvmActivities } from '../../activities/evm/index.js';
import { createAttestActivities } from '../../activities/evm/attest.js';
import { ensureChainIndexers } from '../../activities/evm/indexerControl.js';
import { createEvmWalletClient } from '../../evm/clients.js';
import { findAttestation, openAttestation, recordAttestationTx } from '../../db/queries/trustAttestations.js';
import { trustAttestWorkflowId } from '../../workflows/contracts/trustAttest.js';
import { buildTestApp, testConfig } from '../support/app.js';
import { recordHistory } from '../support/temporal.js';
import { signedHeaders, signChallenge, type TestAgent } from '../support/signing.js';
import { startTestDns, type TestDnsServer } from '../support/testDns.js';
import { startTestSite, type TestSite } from '../support/testSite.js';
import { startTestChain, type TestChain } from '../evm/helpers.js';
import { historiesDir, startPassportStack, type PassportStack, buyPassport } from './passportHarness.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { OnChainAttestation } from '../../db/queries/trustAttestations.js';

type Json = Record<string, any>;

const run = Math.random().toString(36).slice(2, 8);
const DOMAINS = {
  main: `main-${run}.attest.test`,
  busy: `busy-${run}.attest.test`,
  crash: `crash-${run}.attest.test`,
  slow: `slow-${run}.attest.test`,
  quota: `quota-${run}.attest.test`,
};
const CHAIN_ID = 800_000 + Math.floor(Math.random() * 90_000);

describe('trust snapshot attestation on chain (localnet passport, anvil, Temporal, indexer)', () => {
  let ps: PassportStack;
  let chain: TestChain;
  let dns: TestDnsServer;
  let site: TestSite;
  let app: FastifyInstance;
  let holder: TestAgent;
  let stranger: TestAgent;
  let attester: { address: Hex; privateKey: Hex };
  const indexers: WorkflowHandle[] = [];

  const attest = async (domain: string, agent: TestAgent, headers?: Record<string, string>, body?: unknown) => {
    const h = headers ?? (await signedHeaders(app, agent));
    const res = await app.inject({ method: 'POST', url: `/api/trust/${domain}/attest`, headers: { 'content-type': 'application/json', ...h }, payload: JSON.stringify(body ?? { did: agent.did }) });
    return { status: res.statusCode, body: res.json() as Json };
  };
  const attestationLogs = (hash: string) =>
    chain.publicClient.getContractEvents({ address: chain.addresses.passport, abi: agentPassportAbi, eventName: 'DomainAttested', args: { snapshotHash: `0x${hash}` as Hex }, fromBlock: 0n });
  const nonceOf = () => chain.publicClient.getTransactionCount({ address: attester.address, blockTag: 'latest' });
  let env: Record<string, string>;
  /** holder proves ownership of a domain: challenge for its DID, TXT record published, signed verify */
  const prove = async (domain: string, agent: TestAgent) => {
    const ch = (await app.inject({ url: `/api/trust/${domain}/challenge?did=${encodeURIComponent(agent.did)}` })).json() as Json;
    dns.setTxt(`_agent-passport.${domain}`, [`agent-passport-verification=${ch.token}`]);
    const res = await app.inject({ method: 'POST', url: `/api/trust/${domain}/verify-ownership`, headers: { 'content-type': 'application/json', ...(await signedHeaders(app, agent)) }, payload: JSON.stringify({ did: agent.did, token: ch.token }) });
    expect(res.statusCode, res.body).toBe(200);
  };

  beforeAll(async () => {
    ps = await startPassportStack('trust-attest');
    chain = await startTestChain({ chainId: CHAIN_ID });
    attester = { address: chain.anvil.accounts[0]!.address as Hex, privateKey: chain.anvil.accounts[0]!.privateKey };
    dns = await startTestDns();
    site = await startTestSite();
    site.files.set('/robots.txt', 'User-agent: *\nAllow: /\n');
    const origin = site.origin;
    for (const d of Object.values(DOMAINS)) dns.setA(d, ['127.0.0.1']);

    env = {
      ...ps.stack.env,
      TEMPORAL_TASK_QUEUE: ps.t.taskQueue,
      RATE_LIMIT_MAX: '100000',
      TRUST_ALLOW_PRIVATE: 'true',
      TRUST_DNS_SERVERS: dns.address,
      TRUST_FETCH_ORIGINS: Object.values(DOMAINS).map((d) => `${d}=${origin}`).join(','),
      EVM_RPC_URL: chain.anvil.rpcUrl,
      EVM_CHAIN_ID: String(CHAIN_ID),
      PASSPORT_CONTRACT_ADDRESS: chain.addresses.passport,
      ESCROW_CONTRACT_ADDRESS: chain.addresses.escrow,
      INDEXER_CONFIRMATIONS: '0',
      EVM_ATTESTER_KEY: attester.privateKey,
      TRUST_SCANS_DAILY_PER_IP: '100000',
      TRUST_SCANS_HOURLY_PER_SITE: '100000',
    };
    const config = testConfig(env);
    // the harness's passport activities, plus the EVM group of this configuration (attest + indexer)
    await ps.startWorker(createEvmActivities({ config, sql: ps.sql }) as never);
    app = await buildTestApp(env, { sql: ps.sql, ledger: ps.stack.ledger, temporal: async () => ps.t.client });
    for (const id of await ensureChainIndexers(ps.t.client, config, { taskQueue: ps.t.taskQueue, pollIntervalMs: 200 })) indexers.push(ps.t.client.workflow.getHandle(id));

    [holder, stranger] = ps.agents as [TestAgent, TestAgent];
    const bought = await buyPassport(ps, holder, { tier: 'bronze' });
    expect(bought.status, JSON.stringify(bought.body)).toBe(200);
  }, 300_000);

  afterAll(async () => {
    for (const h of indexers) await h.terminate('test over').catch(() => undefined);
    await app?.close();
    await ps?.stop();
    await chain?.anvil.stop();
    await dns?.close();
    await site?.close();
  });

  it('refuses an unsigned request or a bad signature (401) and a signer without a passport (404)', async () => {
    const unsigned = await attest(DOMAINS.main, holder, {});
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.code).toBe('auth_header_missing');

    const good = await signedHeaders(app, holder);
    const forged = { ...good, 'x-service-signature': signChallenge(stranger, good['x-service-challenge']!) };
    const bad = await attest(DOMAINS.main, holder, forged);
    expect(bad.status).toBe(401);
    expect(bad.body.code).toBe('auth_signature_invalid');

    const none = await attest(DOMAINS.main, stranger);
    expect(none.status).toBe(404);
    expect(none.body.code).toBe('passport_not_found');

    const notDomain = await attest('127.0.0.1', holder);
    expect(notDomain.status).toBe(400);
    expect(notDomain.body.code).toBe('trust_domain_invalid');
  });

  it('refuses a passport holder who has not proven ownership of the domain (403, with how to prove it); no transaction', async () => {
    const before = await nonceOf();
    const r = await attest(DOMAINS.main, holder);
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body.code).toBe('trust_ownership_required');
    expect(r.body.hint).toContain(`/api/trust/${DOMAINS.main}/challenge?did=${holder.did}`);
    expect(r.body.hint).toContain('verify-ownership');
    expect(await nonceOf()).toBe(before);
    // proven for one domain is not proven for another
    await prove(DOMAINS.main, holder);
    const other = await attest(DOMAINS.busy, holder);
    expect(other.status).toBe(403);
    expect(other.body.code).toBe('trust_ownership_required');
    await prove(DOMAINS.busy, holder);
    expect(await nonceOf()).toBe(before);
  });

  it('writes the snapshot hash on chain and answers the snapshot with on_chain; the event reaches GET /events', async () => {
    const before = await nonceOf();
    const r = await attest(DOMAINS.main, holder);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const snap = (await app.inject({ url: `/api/trust/${DOMAINS.main}` })).json() as Json;
    // the snapshot as GET serves it, which now shows the same on_chain (the hash does not cover it)
    expect(snap).toEqual(r.body);
    const { on_chain: onChain } = r.body;
    expect(onChain).toMatchObject({
      chain: 'eip155',
      chain_id: CHAIN_ID,
      contract_address: chain.addresses.passport.toLowerCase(),
      attested_by: holder.did,
      revoked: false,
    });
    expect(onChain.token_id).toBeGreaterThan(0);
    expect(onChain.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(Number.isNaN(Date.parse(onChain.attested_at))).toBe(false);
    expect(await nonceOf()).toBe(before + 1);

    // the contract holds it: attestation token, domain, hash, attester (the service's minter key)
    const [domain, hash, by] = await chain.publicClient.readContract({ address: chain.addresses.passport, abi: agentPassportAbi, functionName: 'getAttestation', args: [BigInt(onChain.token_id)] });
    expect(domain).toBe(DOMAINS.main);
    expect(hash).toBe(`0x${snap.integrity.snapshot_hash}`);
    expect(getAddress(by)).toBe(getAddress(attester.address));
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: onChain.tx_hash });
    expect(receipt.status).toBe('success');

    // the indexer picks the DomainAttested event up
    let found: Json | undefined;
    for (let i = 0; i < 200 && !found; i++) {
      const ev = (await app.inject({ url: '/events?eventName=DomainAttested&source=passport' })).json() as Json;
      const items = (ev.events ?? ev.items ?? ev) as Json[];
      found = Array.isArray(items) ? items.find((e) => e.txHash === onChain.tx_hash) : undefined;
      if (!found) await new Promise((res) => setTimeout(res, 100));
    }
    expect(found).toBeDefined();
    expect(found).toMatchObject({ eventName: 'DomainAttested', source: 'passport', txHash: onChain.tx_hash });
    expect(String(found!.args.snapshotHash).toLowerCase()).toBe(`0x${snap.integrity.snapshot_hash}`);
    expect(String(found!.args.domain)).toBe(DOMAINS.main);
    expect(String(found!.args.tokenId)).toBe(String(onChain.token_id));

    const file = path.join(historiesDir, 'trustAttest.history.bin');
    if (!fs.existsSync(file) || process.env.RECORD_HISTORIES === '1') {
      await recordHistory(ps.t.client, trustAttestWorkflowId(DOMAINS.main, snap.integrity.snapshot_hash), file);
    }
  });

  it('is idempotent per snapshot hash: asked again, or many times at once, one transaction', async () => {
    const first = await attest(DOMAINS.main, holder);
    const nonce = await nonceOf();
    const again = await attest(DOMAINS.main, holder);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await nonceOf()).toBe(nonce);
    expect(await attestationLogs(first.body.integrity.snapshot_hash)).toHaveLength(1);

    // a snapshot never attested (scanned first, so all three get the same cached one), asked for by three requests at once
    const scanned = (await app.inject({ url: `/api/trust/${DOMAINS.busy}` })).json() as Json;
    const all = await Promise.all([0, 1, 2].map(() => attest(DOMAINS.busy, holder)));
    for (const r of all) expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(all.map((r) => r.body.integrity.snapshot_hash)).toEqual([0, 1, 2].map(() => scanned.integrity.snapshot_hash));
    expect(new Set(all.map((r) => r.body.on_chain.tx_hash)).size).toBe(1);
    expect(scanned).not.toHaveProperty('on_chain');
    expect(((await app.inject({ url: `/api/trust/${DOMAINS.busy}` })).json() as Json).on_chain).toEqual(all[0]!.body.on_chain);
    expect(await attestationLogs(all[0]!.body.integrity.snapshot_hash)).toHaveLength(1);
    expect(await nonceOf()).toBe(nonce + 1);
  });

  it('answers GET on the attestation (the 202 Location) with its state: pending while the chain write runs, confirmed with on_chain after', async () => {
    // an API whose workflows go to a task queue no worker serves: the attestation stays pending past the bounded wait
    const idle = await buildTestApp({ ...env, TEMPORAL_TASK_QUEUE: `${ps.t.taskQueue}-idle` }, { sql: ps.sql, ledger: ps.stack.ledger, temporal: async () => ps.t.client });
    let workflowId: string | undefined;
    try {
      await prove(DOMAINS.slow, holder);
      const res = await idle.inject({ method: 'POST', url: `/api/trust/${DOMAINS.slow}/attest`, headers: { 'content-type': 'application/json', ...(await signedHeaders(idle, holder)) }, payload: JSON.stringify({ did: holder.did }) });
      expect(res.statusCode, res.body).toBe(202);
      const body = res.json() as Json;
      workflowId = body.workflowId;
      expect(body.code).toBe('request_pending');
      const location = res.headers.location as string;
      expect(location).toMatch(new RegExp(`^/api/trust/${DOMAINS.slow.replace(/\./g, '\\.')}/attestations/[0-9a-f]{64}$`));
      expect(body._links.poll.href).toBe(location);
      const poll = await app.inject({ url: location });
      expect(poll.statusCode, poll.body).toBe(200);
      expect(poll.json()).toMatchObject({ domain: DOMAINS.slow, status: 'pending', attested_by: holder.did, snapshot_hash: location.split('/').pop() });
      expect(poll.json()).not.toHaveProperty('on_chain');
    } finally {
      if (workflowId) await ps.t.client.workflow.getHandle(workflowId).terminate('test over').catch(() => undefined);
      await idle.close();
    }

    // a confirmed one: its state carries on_chain and the attested snapshot, as attest answered them
    const done = await attest(DOMAINS.main, holder);
    const state = await app.inject({ url: `/api/trust/${DOMAINS.main}/attestations/${done.body.integrity.snapshot_hash}` });
    expect(state.statusCode).toBe(200);
    expect(state.json()).toMatchObject({ status: 'confirmed', on_chain: done.body.on_chain, snapshot: done.body });
    // unknown hash, another domain's hash, not a hash: 404
    for (const url of [`/api/trust/${DOMAINS.main}/attestations/${'0'.repeat(64)}`, `/api/trust/${DOMAINS.busy}/attestations/${done.body.integrity.snapshot_hash}`, `/api/trust/${DOMAINS.main}/attestations/xyz`]) {
      const r = await app.inject({ url });
      expect(r.statusCode, url).toBe(404);
      expect(r.json().code).toBe('trust_attestation_not_found');
    }
  }, 90_000);

  it('new attestations count against a per-DID daily quota: 429 with the rate-limit headers, no transaction; attested hashes stay free', async () => {
    await prove(DOMAINS.quota, holder);
    const [used] = await ps.sql<{ count: number }[]>`select count from quota_counters where scope = 'trust.attest.did' and subject = ${holder.did} order by window_start desc limit 1`;
    // one place left; every request rescans (no cache), so every attest is a new snapshot hash
    const limited = await buildTestApp({ ...env, TRUST_ATTEST_DAILY_PER_DID: String((used?.count ?? 0) + 1), TRUST_SNAPSHOT_TTL_MS: '0' }, { sql: ps.sql, ledger: ps.stack.ledger, temporal: async () => ps.t.client });
    try {
      const send = async () => {
        const res = await limited.inject({ method: 'POST', url: `/api/trust/${DOMAINS.quota}/attest`, headers: { 'content-type': 'application/json', ...(await signedHeaders(limited, holder)) }, payload: JSON.stringify({ did: holder.did }) });
        return { status: res.statusCode, body: res.json() as Json, headers: res.headers };
      };
      const first = await send();
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      const nonce = await nonceOf();
      const over = await send();
      expect(over.status, JSON.stringify(over.body)).toBe(429);
      expect(over.body).toMatchObject({ code: 'trust_quota_exceeded', retryable: true });
      expect(over.headers['x-ratelimit-limit']).toBe(String((used?.count ?? 0) + 1));
      expect(over.headers['x-ratelimit-remaining']).toBe('0');
      expect(Number(over.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
      expect(await nonceOf()).toBe(nonce);
      // a hash already attested is answered from the record, quota or not
      const again = await limited.inject({ url: `/api/trust/${DOMAINS.quota}/attestations/${first.body.integrity.snapshot_hash}` });
      expect(again.json().status).toBe('confirmed');
      const attested = await attest(DOMAINS.main, holder);
      expect(attested.status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('a retried activity sends the transaction it recorded before a crash, never a second one', async () => {
    // the state a crash leaves between "recorded" and "sent": a signed attestDomain in the row, not on chain
    const hash = keccak256(`0x${Buffer.from(`crash-${run}`).toString('hex')}`).slice(2);
    await openAttestation(ps.sql, { snapshotHash: hash, domain: DOMAINS.crash, attestedBy: holder.did, chainId: CHAIN_ID, contractAddress: chain.addresses.passport.toLowerCase(), snapshot: { domain: DOMAINS.crash } });
    const wallet = createEvmWalletClient({ rpcUrl: chain.anvil.rpcUrl, chainId: CHAIN_ID }, attester.privateKey);
    const nonce = await nonceOf();
    const data = encodeFunctionData({ abi: agentPassportAbi, functionName: 'attestDomain', args: [DOMAINS.crash, `0x${hash}`] });
    const request = await wallet.prepareTransactionRequest({ to: chain.addresses.passport, data, nonce, chain: wallet.chain, account: wallet.account });
    const raw = await wallet.signTransaction(request as never);
    expect(await recordAttestationTx(ps.sql, hash, { hash: keccak256(raw), raw, nonce })).toBe(true);
    expect(await attestationLogs(hash)).toHaveLength(0);

    const acts = createAttestActivities({ sql: ps.sql, chainId: CHAIN_ID, contract: chain.addresses.passport, publicClient: chain.publicClient, walletClient: wallet });
    // as the record's own workflow runs it (issue 26 item 2: the key signs only the record of the calling workflow)
    const step = new MockActivityEnvironment({ workflowExecution: { workflowId: trustAttestWorkflowId(DOMAINS.crash, hash), runId: 'test-run' } });
    const onChain: OnChainAttestation = await step.run(acts.attestSnapshot, { domain: DOMAINS.crash, snapshotHash: hash });
    expect(onChain.tx_hash).toBe(keccak256(raw));
    // and once more: the recorded outcome, no new transaction
    expect(await step.run(acts.attestSnapshot, { domain: DOMAINS.crash, snapshotHash: hash })).toEqual(onChain);
    // another workflow's run (a copied input under another id) signs nothing for this record
    const foreign = new MockActivityEnvironment({ workflowExecution: { workflowId: 'trust-attest:elsewhere.example:0', runId: 'test-run' } });
    await expect(foreign.run(acts.attestSnapshot, { domain: DOMAINS.crash, snapshotHash: hash })).rejects.toThrow(/is not this workflow's/);
    expect(await attestationLogs(hash)).toHaveLength(1);
    expect(await nonceOf()).toBe(nonce + 1);
    expect((await findAttestation(ps.sql, hash))?.status).toBe('confirmed');
  });
});
