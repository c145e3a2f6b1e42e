/**
 * The chain indexer end to end: real anvil (own port and state file), real PostgreSQL (the run's
 * migrated database) and the Temporal dev server. Each scenario ends with the index compared, row
 * for row, against eth_getLogs of the whole chain: no gap and no duplicate.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import proto from '@temporalio/proto';
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { keccak256, toHex, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSql, type Sql } from '../../db/client.js';
import { loadConfig } from '../../config/index.js';
import { buildApp } from '../../api/app.js';
import { agentPassportAbi, taskEscrowAbi } from '../../evm/abis.js';
import { startAnvil } from '../../evm/anvil.js';
import { createIndexerActivities, decodeLogs, type ChainEventSource } from '../../activities/evm/indexer.js';
import { chainIndexer } from '../../workflows/chainIndexer.js';
import { chainIndexerContract, chainIndexerWorkflowId } from '../../workflows/contracts/chainIndexer.js';
import { startWorkflow } from '../../temporal/workflows.js';
import { getCheckpoint } from '../../db/queries/chainEvents.js';
import { connectTestTemporal, type TestTemporal } from '../support/temporal.js';
import { ensureChainIndexers } from '../../activities/evm/indexerControl.js';
import { mined, startTestChain, type TestChain } from './helpers.js';

const CHAIN_ID = 700_000 + Math.floor(Math.random() * 90_000);
const SOURCES: ChainEventSource[] = ['passport', 'escrow'];
const workflowsPath = fileURLToPath(new URL('../../workflows/chainIndexer.ts', import.meta.url));

let dir: string;
let stateFile: string;
let chain: TestChain;
let sql: Sql;
let temporal: TestTemporal;
let bundle: Awaited<ReturnType<typeof bundleWorkflowCode>>;
let worker: Worker | undefined;
let workerRun: Promise<void> | undefined;
const handles: WorkflowHandleWithFirstExecutionRunId[] = [];

function activities() {
  return createIndexerActivities({
    sql,
    clients: { [CHAIN_ID]: chain.publicClient },
    sources: [
      { chainId: CHAIN_ID, source: 'passport', address: chain.addresses.passport },
      { chainId: CHAIN_ID, source: 'escrow', address: chain.addresses.escrow },
    ],
    confirmations: 0,
    maxBlockRange: 7,
  });
}

async function startWorker() {
  worker = await Worker.create({
    connection: temporal.connection,
    namespace: 'default',
    taskQueue: temporal.taskQueue,
    workflowBundle: bundle,
    activities: activities(),
  });
  workerRun = worker.run();
}

async function stopWorker() {
  worker?.shutdown();
  await workerRun;
  worker = undefined;
}

// ---------------------------------------------------------------- chain activity

let taskCounter = 0;
async function produceEvents(mints = 3): Promise<Hex[]> {
  const [A, B] = chain.wallets as [typeof chain.wallets[0], typeof chain.wallets[0]];
  const hashes: Hex[] = [];
  for (let i = 0; i < mints; i++) {
    const to = privateKeyToAccount(generatePrivateKey()).address;
    const r = await mined(
      chain,
      A.writeContract({
        address: chain.addresses.passport,
        abi: agentPassportAbi,
        functionName: 'mint',
        args: [to, i % 3, ['api_call', 'payment'], 1, `ipfs://card/${i}`],
      }),
    );
    hashes.push(r.transactionHash);
  }
  const id = keccak256(toHex(`task-${CHAIN_ID}-${taskCounter++}`));
  const fund = await mined(chain, B.writeContract({ address: chain.addresses.escrow, abi: taskEscrowAbi, functionName: 'fund', args: [id], value: 12345678901234567890n }));
  const release = await mined(chain, B.writeContract({ address: chain.addresses.escrow, abi: taskEscrowAbi, functionName: 'release', args: [id, A.account.address] }));
  const id2 = keccak256(toHex(`task-${CHAIN_ID}-${taskCounter++}`));
  const fund2 = await mined(chain, B.writeContract({ address: chain.addresses.escrow, abi: taskEscrowAbi, functionName: 'fund', args: [id2], value: 1n }));
  const refund = await mined(chain, A.writeContract({ address: chain.addresses.escrow, abi: taskEscrowAbi, functionName: 'refund', args: [id2] }));
  hashes.push(fund.transactionHash, release.transactionHash, fund2.transactionHash, refund.transactionHash);
  return hashes;
}

// ---------------------------------------------------------------- ground truth vs index

interface Key {
  key: string;
  txHash: string;
}

async function chainTruth(): Promise<{ keys: string[]; head: number }> {
  const head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
  const keys: string[] = [];
  for (const source of SOURCES) {
    const logs = await chain.publicClient.getLogs({ address: chain.addresses[source], fromBlock: 0n, toBlock: BigInt(head) });
    const { rows } = decodeLogs({ chainId: CHAIN_ID, source, abi: source === 'passport' ? agentPassportAbi : taskEscrowAbi } as never, logs as never);
    for (const r of rows) keys.push(`${r.blockNumber}:${r.blockHash}:${r.txHash}:${r.logIndex}:${source}:${r.eventName}`);
  }
  return { keys: keys.sort(), head };
}

async function indexRows(): Promise<Key[]> {
  const rows = await sql<{ block_number: bigint; block_hash: string; tx_hash: string; log_index: number; source: string; event_name: string }[]>`
    SELECT block_number, block_hash, tx_hash, log_index, source, event_name FROM chain_events WHERE chain_id = ${CHAIN_ID}`;
  return rows.map((r) => ({
    key: `${Number(r.block_number)}:${r.block_hash}:${r.tx_hash}:${r.log_index}:${r.source}:${r.event_name}`,
    txHash: r.tx_hash,
  }));
}

/** Waits until both checkpoints reached the head and the index equals the chain's logs. */
async function waitInSync(timeoutMs = 60_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const truth = await chainTruth().catch(() => undefined);
    if (truth) {
      const cps = await Promise.all(SOURCES.map((s) => getCheckpoint(sql, CHAIN_ID, s)));
      const idx = (await indexRows()).map((r) => r.key).sort();
      if (cps.every((c) => c && c.blockNumber >= truth.head) && JSON.stringify(idx) === JSON.stringify(truth.keys)) {
        return idx;
      }
      last = `head ${truth.head}, checkpoints ${cps.map((c) => c?.blockNumber).join(',')}, index ${idx.length} rows, chain ${truth.keys.length} logs`;
    }
    if (Date.now() > deadline) throw new Error(`index not in sync: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---------------------------------------------------------------- lifecycle

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evm-indexer-'));
  stateFile = join(dir, 'anvil-state.json');
  chain = await startTestChain({ chainId: CHAIN_ID, stateFile });
  sql = createSql(inject('databaseUrl'), { max: 5 });
  temporal = await connectTestTemporal('evm-indexer');
  bundle = await bundleWorkflowCode({ workflowsPath, logger: { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} } as never });
  await produceEvents(4);
  await startWorker();
  for (const source of SOURCES) {
    handles.push(
      await startWorkflow(
        temporal.client,
        chainIndexerContract,
        { chainId: CHAIN_ID, source, pollIntervalMs: 200, confirmations: 0, blockRange: 7, iterationsPerRun: 3, retryInitialIntervalMs: 200, retryMaximumIntervalMs: 1_000 },
        { taskQueue: temporal.taskQueue, workflowId: chainIndexerWorkflowId(CHAIN_ID, source), workflowIdConflictPolicy: 'TERMINATE_EXISTING' },
      ),
    );
  }
}, 180_000);

afterAll(async () => {
  for (const h of handles) await h.terminate('test finished').catch(() => {});
  await stopWorker().catch(() => {});
  await temporal?.close();
  await sql?.end();
  await chain?.anvil.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------- scenarios

describe('chainIndexer', () => {
  it('catches up from block 0 and stores every event exactly once', async () => {
    const keys = await waitInSync();
    expect(keys.length).toBe(1 + 4 * 2 + 4); // Transfer + PassportMinted per mint, four escrow events
    const dupes = await sql`
      SELECT tx_hash, log_index FROM chain_events WHERE chain_id = ${CHAIN_ID}
      GROUP BY tx_hash, log_index HAVING count(*) > 1`;
    expect(dupes.length).toBe(0);
    const desc = await handles[0]!.describe();
    expect(desc.status.name).toBe('RUNNING');
  });

  it('serves GET /events with every filter', async () => {
    const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', EVM_CHAIN_ID: String(CHAIN_ID), RATE_LIMIT_MAX: '100000' });
    const app = await buildApp({ config, sql }, { logger: false });
    try {
      const get = async (qs: string) => {
        const res = await app.inject({ method: 'GET', url: `/events${qs}` });
        return { status: res.statusCode, body: res.json() as Record<string, any> };
      };
      const truth = (await chainTruth()).keys.map((k) => {
        const [block, , tx, li, source, name] = k.split(':');
        return { blockNumber: Number(block), txHash: tx!, logIndex: Number(li), source: source!, eventName: name! };
      });
      truth.sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
      const view = (e: Record<string, any>) => ({ blockNumber: e.blockNumber, txHash: e.txHash, logIndex: e.logIndex, source: e.source, eventName: e.eventName });

      const all = await get('');
      expect(all.status).toBe(200);
      expect(all.body).toMatchObject({ total: truth.length, limit: 20, offset: 0 });
      expect(all.body.events.map(view)).toEqual(truth.slice(0, 20));

      const page = await get('?limit=3&offset=2');
      expect(page.body).toMatchObject({ total: truth.length, limit: 3, offset: 2 });
      expect(page.body.events.map(view)).toEqual(truth.slice(2, 5));

      const minted = await get('?eventName=PassportMinted&limit=100');
      expect(minted.body.total).toBe(truth.filter((e) => e.eventName === 'PassportMinted').length);
      expect(minted.body.events.every((e: any) => e.eventName === 'PassportMinted' && e.source === 'passport')).toBe(true);
      const card = minted.body.events[0].args;
      expect(card).toMatchObject({ tier: 1, capabilities: ['api_call', 'payment'], metadataUri: 'ipfs://card/0' });

      const escrow = await get('?source=escrow&limit=100');
      expect(escrow.body.events.map(view)).toEqual(truth.filter((e) => e.source === 'escrow'));
      const funded = escrow.body.events.find((e: any) => e.eventName === 'TaskFunded');
      expect(funded.args.amount).toBe('12345678901234567890'); // bigint as a decimal string

      const b1 = truth[3]!.blockNumber;
      const b2 = truth[8]!.blockNumber;
      const range = await get(`?fromBlock=${b1}&toBlock=${b2}&limit=100`);
      expect(range.body.events.map(view)).toEqual(truth.filter((e) => e.blockNumber >= b1 && e.blockNumber <= b2));

      const combo = await get(`?source=passport&eventName=Transfer&fromBlock=${b1}&limit=100`);
      expect(combo.body.events.map(view)).toEqual(
        truth.filter((e) => e.source === 'passport' && e.eventName === 'Transfer' && e.blockNumber >= b1),
      );
      expect((await get('?eventName=NoSuchEvent')).body).toMatchObject({ events: [], total: 0 });

      for (const bad of ['?limit=101', '?limit=0', '?offset=-1', '?source=ledger', '?fromBlock=abc', '?fromBlock=9&toBlock=3', '?eventName=drop%20table', '?colour=red']) {
        const res = await get(bad);
        expect(res.status, bad).toBe(400);
        expect(res.body.code, bad).toBe('invalid_request');
      }
    } finally {
      await app.close();
    }
  });

  it('resumes from its checkpoint after a worker restart, without duplicates', async () => {
    await waitInSync();
    await stopWorker();
    const cpBefore = await getCheckpoint(sql, CHAIN_ID, 'passport');
    await produceEvents(3);
    // nothing indexes while no worker runs
    expect((await getCheckpoint(sql, CHAIN_ID, 'passport'))!.blockNumber).toBe(cpBefore!.blockNumber);
    await startWorker();
    const keys = await waitInSync();
    expect(keys.length).toBe(1 + 4 * 2 + 4 + 3 * 2 + 4);
  });

  it('survives anvil being stopped and restarted on the same state file, with no gap', async () => {
    await waitInSync();
    const before = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
    const port = chain.anvil.port;
    await chain.anvil.stop();
    // the activity now fails and Temporal retries it
    const deadline = Date.now() + 30_000;
    for (;;) {
      const d = await handles[0]!.describe();
      if ((d.raw.pendingActivities?.[0]?.attempt ?? 0) >= 2) break;
      if (Date.now() > deadline) throw new Error('activity was not retried during the outage');
      await new Promise((r) => setTimeout(r, 200));
    }
    chain.anvil = await startAnvil({ port, chainId: CHAIN_ID, stateFile });
    expect(Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }))).toBe(before);
    await produceEvents(2);
    const keys = await waitInSync();
    expect(keys.length).toBe(1 + 4 * 2 + 4 + 3 * 2 + 4 + 2 * 2 + 4);
  });

  it('repairs a reorg (evm_snapshot / evm_revert, then different blocks)', async () => {
    await waitInSync();
    const snapshot = await chain.publicClient.request({ method: 'evm_snapshot' as never });
    const orphaned = await produceEvents(2);
    await waitInSync();
    const indexed = new Set((await indexRows()).map((r) => r.txHash));
    expect(orphaned.every((h) => indexed.has(h))).toBe(true);

    await chain.publicClient.request({ method: 'evm_revert' as never, params: [snapshot] as never });
    const replacement = await produceEvents(3); // a longer, different branch
    const keys = await waitInSync();
    const after = new Set((await indexRows()).map((r) => r.txHash));
    expect(orphaned.some((h) => after.has(h))).toBe(false);
    expect(replacement.every((h) => after.has(h))).toBe(true);
    expect(keys.length).toBe(1 + 4 * 2 + 4 + 3 * 2 + 4 + 2 * 2 + 4 + 3 * 2 + 4);
  });

  it('has continued as new (iterationsPerRun 3) and is still running', async () => {
    for (const h of handles) {
      const d = await h.describe();
      expect(d.status.name).toBe('RUNNING');
      expect(d.runId).not.toBe(h.firstExecutionRunId);
    }
  });

  it('ensureChainIndexers keeps the running indexers (same workflow ids, no second run)', async () => {
    const config = loadConfig({
      NODE_ENV: 'test',
      EVM_RPC_URL: chain.anvil.rpcUrl,
      EVM_CHAIN_ID: String(CHAIN_ID),
      PASSPORT_CONTRACT_ADDRESS: chain.addresses.passport,
      ESCROW_CONTRACT_ADDRESS: chain.addresses.escrow,
    });
    const ids = await ensureChainIndexers(temporal.client, config, { taskQueue: temporal.taskQueue });
    expect(ids).toEqual([chainIndexerWorkflowId(CHAIN_ID, 'passport'), chainIndexerWorkflowId(CHAIN_ID, 'escrow')]);
    const after = await Promise.all(handles.map((h) => h.describe()));
    expect(after.map((d) => d.status.name)).toEqual(['RUNNING', 'RUNNING']);
    // still the chain of runs started in beforeAll (continue-as-new keeps firstRunId)
    expect(after.map((d) => d.raw.workflowExecutionInfo?.firstRunId)).toEqual(handles.map((h) => h.firstExecutionRunId));
  });

  it('records a replayable history (first run of a short indexer, ending in continue-as-new)', async () => {
    for (const h of handles) await h.terminate('replaced by a short run');
    const short = await startWorkflow(
      temporal.client,
      chainIndexerContract,
      { chainId: CHAIN_ID, source: 'passport', pollIntervalMs: 50, confirmations: 0, blockRange: 7, iterationsPerRun: 3, maxIterations: 5 },
      { taskQueue: temporal.taskQueue, workflowId: chainIndexerWorkflowId(CHAIN_ID, 'passport') },
    );
    handles.push(short);
    expect(await short.result()).toEqual({ iterations: 5, events: 0 });
    const history = await temporal.client.workflow.getHandle(short.workflowId, short.firstExecutionRunId).fetchHistory();
    const events = history.events ?? [];
    expect(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    // under its own workflow id: the start's binding names it (issue 26)
    await Worker.runReplayHistory({ workflowBundle: bundle }, history, short.workflowId);
    const file = fileURLToPath(new URL('../fixtures/histories/chainIndexer.history.bin', import.meta.url));
    if (!existsSync(file) || process.env.RECORD_HISTORIES === '1') {
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, proto.temporal.api.history.v1.History.encode(history).finish());
    }
  });
});
