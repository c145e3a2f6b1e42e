/**
 * Issue 8, "a revoke, read through a second API instance": two API instances (two buildApp, each
 * with its own PostgreSQL pool, real HTTP on free ports) over one database. A passport issued and
 * revoked through instance A shows on instance B through PostgreSQL NOTIFY, also after B's LISTEN
 * connection was killed (pg_terminate_backend). Outcomes are polled with a deadline; no timings are
 * asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import type { FastifyInstance } from 'fastify';
import type { Sql } from '../../db/client.js';
import { listenerBackendPid } from '../../db/notify.js';
import type { TestAgent } from '../support/signing.js';
import { buildTestApp } from '../support/app.js';
import { ADMIN_TOKEN, getJson, startPassportStack, type PassportStack, buyPassport } from './passportHarness.js';

/** Polls GET url on base until its status is `status`; returns the last status seen. */
async function statusBecomes(base: string, url: string, status: number, deadlineMs = 5_000): Promise<number> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const res = await fetch(`${base}${url}`);
    await res.arrayBuffer();
    if (res.status === status || Date.now() > until) return res.status;
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('passport cache across two API instances (PostgreSQL NOTIFY)', () => {
  let ps: PassportStack;
  let sqlB: Sql;
  let appB: FastifyInstance;
  let baseB: string;
  let agents: TestAgent[];

  const revokeThroughA = async (tokenId: string, serial: number) => {
    const res = await fetch(`${ps.baseUrl}/admin/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ tokenId, serial, reason: 'cache test' }),
    });
    expect(res.status, await res.text()).toBe(200);
  };

  const issueThroughA = async (agent: TestAgent) => {
    const r = await buyPassport(ps, agent, { did: agent.did, tier: 'bronze' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return { tokenId: r.body.tokenId as string, serial: r.body.serialNumber as number };
  };

  beforeAll(async () => {
    ps = await startPassportStack('pcache');
    await ps.startWorker();
    agents = ps.agents;
    // instance B: its own pool (so its own LISTEN connection and cache) on the same database
    sqlB = postgres({ ...ps.sql.options, max: 3 } as never) as unknown as Sql;
    appB = await buildTestApp({ ...ps.stack.env, RATE_LIMIT_MAX: '100000' }, { sql: sqlB, ledger: { ...ps.stack.ledger } });
    await appB.listen({ port: 0, host: '127.0.0.1' });
    baseB = `http://127.0.0.1:${(appB.server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await appB?.close();
    await sqlB?.end();
    await ps?.stop();
  });

  it('B serves a passport issued through A, and answers 404 for its DID and passport once A revoked it', async () => {
    const agent = agents[0];
    const { tokenId, serial } = await issueThroughA(agent);
    expect(await statusBecomes(baseB, `/passport/${tokenId}/${serial}`, 200)).toBe(200);
    expect(await statusBecomes(baseB, `/did/${agent.did}`, 200)).toBe(200);
    const listed = await fetch(`${baseB}/passport/address/${agent.accountId}`).then((r) => r.json() as Promise<Record<string, any>>);
    expect(listed.passports).toEqual([expect.objectContaining({ tokenId, serialNumber: serial, active: true })]);

    await revokeThroughA(tokenId, serial);
    // A answers from its own cache at once (read-your-writes) ...
    expect((await getJson(ps, `/did/${agent.did}`)).status).toBe(404);
    expect((await getJson(ps, `/passport/${tokenId}/${serial}`)).status).toBe(404);
    // ... and B follows through the NOTIFY
    expect(await statusBecomes(baseB, `/did/${agent.did}`, 404)).toBe(404);
    expect(await statusBecomes(baseB, `/passport/${tokenId}/${serial}`, 404)).toBe(404);
    const after = await fetch(`${baseB}/passport/address/${agent.accountId}`).then((r) => r.json() as Promise<Record<string, any>>);
    expect(after.passports).toEqual([expect.objectContaining({ tokenId, serialNumber: serial, active: false })]);
  });

  it('after B lost its LISTEN connection (pg_terminate_backend) it reloads and keeps following A', async () => {
    const agent = agents[1];
    const { tokenId, serial } = await issueThroughA(agent);
    expect(await statusBecomes(baseB, `/did/${agent.did}`, 200)).toBe(200);

    const pid = await listenerBackendPid(sqlB);
    expect(pid).toBeTypeOf('number');
    const [{ killed }] = await ps.sql<{ killed: boolean }[]>`select pg_terminate_backend(${pid}) as killed`;
    expect(killed).toBe(true);

    await revokeThroughA(tokenId, serial);
    expect(await statusBecomes(baseB, `/did/${agent.did}`, 404)).toBe(404);
    expect(await statusBecomes(baseB, `/passport/${tokenId}/${serial}`, 404)).toBe(404);
    expect(await listenerBackendPid(sqlB)).not.toBe(pid);
  });
});
