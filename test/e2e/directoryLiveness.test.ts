// Directory liveness and card verification by the directoryProbe workflow (issue 29 items 5 and 6),
// on the Temporal dev server and real PostgreSQL, with agents served by a local HTTP server (reached
// through the SSRF guard with TRUST_ALLOW_PRIVATE's lift, as in tests): an agent whose endpoint
// answers is online with lastSeenAt; one whose endpoint stops answering goes offline after the next
// probe and drops out of the online filter of the directory in memory (GET /agents?online=true); an
// agent whose card is signed by its DID's account key is verified, one whose card is signed by
// another key is not, and a card changed to an unsigned one is no longer verified after a probe.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import canonicalize from 'canonicalize';
import { FlattenedSign } from 'jose';
import type { Worker } from '@temporalio/worker';
import { createSql, type Sql } from '../../db/client.js';
import { agentEntryOf, findAgent, recordProbe, recordRegisteredAgent } from '../../db/queries/agents.js';
import { deleteDirectoryProbe, ensureDirectoryProbe } from '../../worker/directoryProbe.js';
import { createDirectoryProbeActivities } from '../../activities/web/directoryProbe.js';
import { AgentDirectory } from '../../api/agents/directory.js';
import type { CardKey } from '../../domain/agentCardSignature.js';
import { startWorkflow } from '../../temporal/workflows.js';
import { directoryProbeContract, type ProbeOutcome } from '../../workflows/contracts/directoryProbe.js';
import { connectTestTemporal, recordHistory, type TestTemporal } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
const historyFile = path.join(here, '..', 'fixtures', 'histories', 'directoryProbe.history.bin');

/** A network name no other test file uses: the probe only looks at its own network's entries. */
const network = `probe${process.pid}`;
const base = 800_000 + (process.pid % 50_000) * 10;

function ed25519(): { privateKey: KeyObject; key: CardKey } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return { privateKey, key: { type: 'ED25519', raw: der.subarray(der.length - 32) } };
}

async function signedCard(card: Record<string, unknown>, privateKey: KeyObject, kid: string) {
  const s = await new FlattenedSign(new TextEncoder().encode(canonicalize(card)!)).setProtectedHeader({ alg: 'EdDSA', typ: 'JOSE', kid }).sign(privateKey);
  return { ...card, signatures: [{ protected: s.protected!, signature: s.signature }] };
}

describe('directoryProbe: liveness and card verification of directory entries', () => {
  let sql: Sql;
  let t: TestTemporal;
  let worker: Worker;
  let running: Promise<void>;
  let server: http.Server;
  let origin: string;
  let directory: AgentDirectory;
  const probes: ProbeOutcome[] = [];
  /** path -> JSON body; a path not here answers 404; `down` paths close the connection without an answer */
  const routes = new Map<string, unknown>();
  const down = new Set<string>();
  const keys = new Map<string, CardKey>();

  const agent = (i: number) => {
    const accountId = `0.0.${base + i}`;
    return { accountId, did: `did:hedera:${network}:${accountId}`, name: `probe-${process.pid}-${i}` };
  };
  const [live, stopping, verified, forged] = [agent(1), agent(2), agent(3), agent(4)];

  const register = async (a: ReturnType<typeof agent>, sequence: number, endpoint: string, agentCard?: string) =>
    recordRegisteredAgent(sql, {
      message: { v: 1, type: 'agent.registered', did: a.did, accountId: a.accountId, tokenId: '0.0.7001', serial: base + sequence, name: a.name, capabilities: ['api_call'], endpoint, tier: 'gold', timestamp: Date.now(), ...(agentCard ? { agentCard } : {}) },
      network,
      directorySequence: base + sequence,
      directoryTransactionId: `0.0.2@${base + sequence}.000000000`,
      auditTransactionId: `0.0.2@${base + sequence}.000000001`,
      workflowId: `seed-probe-${base + sequence}`,
    });

  const entryOf = async (did: string) => agentEntryOf((await findAgent(sql, did))!).entry;

  let pass = 0;
  const probeOnce = async () => {
    const workflowId = `directory-probe-test-${t.taskQueue}-${++pass}`;
    const handle = await startWorkflow(t.client, directoryProbeContract, { everyMs: 0, batch: 20, concurrency: 4 }, { workflowId, taskQueue: t.taskQueue });
    return { workflowId, result: await handle.result() };
  };

  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'));
    server = http.createServer((req, res) => {
      const p = req.url ?? '/';
      if (down.has(p)) return void req.socket.destroy();
      if (!routes.has(p)) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(routes.get(p)));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const own = ed25519();
    const other = ed25519();
    keys.set(verified.accountId, own.key);
    keys.set(forged.accountId, ed25519().key); // the account's key is not the one that signed its card
    const card = (a: ReturnType<typeof agent>) => ({ did: a.did, name: a.name, description: 'probe test', version: '1', supportedInterfaces: [{ url: `${origin}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }], capabilities: {}, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [{ id: 's', name: 's', description: 's', tags: ['t'] }] });
    routes.set('/live', { ok: true });
    routes.set('/stopping', { ok: true });
    routes.set('/verified/card.json', await signedCard(card(verified), own.privateKey, `${verified.did}#key-1`));
    routes.set('/forged/card.json', await signedCard(card(forged), other.privateKey, `${forged.did}#key-1`));

    await register(live, 1, `${origin}/live`);
    await register(stopping, 2, `${origin}/stopping`);
    await register(verified, 3, `${origin}/nothing-here`, `${origin}/verified/card.json`);
    await register(forged, 4, `${origin}/nothing-here`, `${origin}/forged/card.json`);

    directory = new AgentDirectory(sql, () => undefined);
    await directory.ready(30_000);

    t = await connectTestTemporal('probe');
    worker = await t.createWorker({
      workflowsPath,
      activities: createDirectoryProbeActivities({
        sql,
        network,
        bounds: { everyMs: 0, batchMax: 20, staleAfterMs: 86_400_000 },
        fetch: { allowPrivate: true, allowLoopback: false },
        accountKey: async (accountId) => keys.get(accountId) ?? null,
        onProbe: (o) => probes.push(o),
      }),
    });
    running = worker.run();
  }, 120_000);

  afterAll(async () => {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await t?.close();
    await directory?.close();
    await sql`delete from agents where network = ${network}`.catch(() => undefined);
    await sql?.end();
    await new Promise((r) => server?.close(r));
  });

  const onlineNames = () => directory.query({ online: true, name: `probe-${process.pid}-`, limit: 50, offset: 0 }).agents.map((a) => a.name).sort();

  it('before any probe an entry says so: online null, never seen, not stale; the card not checked yet', async () => {
    const e = await entryOf(live.did);
    expect(e).toMatchObject({ online: null, lastSeenAt: null, stale: false, cardVerified: false, cardVerification: 'no_card' });
    expect((await entryOf(verified.did)).cardVerification).toBe('not_checked');
    expect(onlineNames()).toEqual([]);
  });

  it('a probe marks answering agents online with lastSeenAt, verifies the card signed by the DID key and not the one signed by another key', async () => {
    const before = Date.now();
    const { workflowId, result } = await probeOnce();
    expect(result).toEqual({ checked: 4, online: 4, offline: 0, failed: 0 });
    expect(probes.sort()).toEqual(['card', 'card', 'endpoint', 'endpoint']);
    for (const a of [live, stopping, verified, forged]) {
      const e = await entryOf(a.did);
      expect(e.online, a.name).toBe(true);
      expect(e.lastSeenAt!, a.name).toBeGreaterThanOrEqual(before - 1000);
    }
    expect(await entryOf(verified.did)).toMatchObject({ cardVerified: true, cardVerification: 'verified' });
    expect(await entryOf(forged.did)).toMatchObject({ cardVerified: false, cardVerification: 'signature_invalid' });
    // the directory in memory (what GET /agents?online=true answers from) follows by NOTIFY
    await expect.poll(onlineNames, { timeout: 10_000 }).toEqual([live.name, stopping.name, verified.name, forged.name].sort());
    expect(directory.get(verified.did)?.cardVerified).toBe(true);
    // the replay fixture (test/workflows/directoryProbeReplay.test.ts), recorded once
    if (!fs.existsSync(historyFile) || process.env.RECORD_HISTORIES === '1') await recordHistory(t.client, workflowId, historyFile);
  });

  it('an agent whose endpoint stops answering goes offline after the next probe and leaves the online filter; a card replaced by an unsigned one is no longer verified', async () => {
    const seen = (await entryOf(stopping.did)).lastSeenAt;
    down.add('/stopping');
    const unsigned = { ...(routes.get('/verified/card.json') as Record<string, unknown>) };
    delete unsigned.signatures;
    routes.set('/verified/card.json', unsigned);
    const { result } = await probeOnce();
    expect(result).toEqual({ checked: 4, online: 3, offline: 1, failed: 0 });
    const e = await entryOf(stopping.did);
    expect(e).toMatchObject({ online: false, lastSeenAt: seen, stale: false });
    expect(await entryOf(verified.did)).toMatchObject({ online: true, cardVerified: false, cardVerification: 'unsigned' });
    await expect.poll(onlineNames, { timeout: 10_000 }).toEqual([live.name, verified.name, forged.name].sort());
    expect(directory.query({ online: false, name: `probe-${process.pid}-`, limit: 50, offset: 0 }).agents.map((a) => a.name)).toEqual([stopping.name]);
  });

  it('an entry not seen for DIRECTORY_STALE_AFTER_S is flagged stale when a probe records it offline', async () => {
    // the probe's write with a stale bound shorter than the time since the agent was last seen
    await recordProbe(sql, { did: stopping.did, online: false, staleAfterMs: 1 });
    expect(await entryOf(stopping.did)).toMatchObject({ online: false, stale: true });
    await expect.poll(() => directory.get(stopping.did)?.stale, { timeout: 10_000 }).toBe(true);
  });

  it('the worker\'s Schedule: ensured idempotently (a pass every min(DIRECTORY_PROBE_EVERY_S, 300 s)), and a pass it starts probes an entry never probed', async () => {
    const fresh = agent(5);
    await register(fresh, 5, `${origin}/live`);
    const options = { taskQueue: t.taskQueue, everyMs: 3_600_000, batch: 100 };
    const id = await ensureDirectoryProbe(t.client, options);
    try {
      expect(await ensureDirectoryProbe(t.client, options)).toBe(id); // a second worker finds it
      const described = await t.client.schedule.getHandle(id).describe();
      expect(described.spec.intervals?.map((i) => i.every)).toEqual([300_000]);
      expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'directoryProbe', taskQueue: t.taskQueue, args: [{ everyMs: 3_600_000, batch: 100 }] });
      await t.client.schedule.getHandle(id).trigger();
      await expect.poll(async () => (await entryOf(fresh.did)).online, { timeout: 60_000, interval: 500 }).toBe(true);
    } finally {
      await deleteDirectoryProbe(t.client, t.taskQueue);
    }
  }, 90_000);
});
