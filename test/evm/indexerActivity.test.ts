/**
 * The fetchAndStore activity on its own: confirmations, range halving behind an RPC that refuses
 * large getLogs ranges, an RPC outage (throws, checkpoint untouched), and JSON-safe arguments.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { keccak256, toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSql, type Sql } from '../../db/client.js';
import { agentPassportAbi, taskEscrowAbi } from '../../evm/abis.js';
import { createEvmPublicClient } from '../../evm/clients.js';
import { createIndexerActivities, getLogsAdaptive, toJsonSafe } from '../../activities/evm/indexer.js';
import { countEvents, getCheckpoint } from '../../db/queries/chainEvents.js';
import { mined, startTestChain, type TestChain } from './helpers.js';

const CHAIN_ID = 800_000 + Math.floor(Math.random() * 90_000);
const MAX_PROXY_RANGE = 4;

let chain: TestChain;
let sql: Sql;
let proxy: Server;
let proxyUrl: string;
let proxyDown = false;
let refusals = 0;

/** A JSON-RPC proxy in front of anvil that refuses eth_getLogs over more than MAX_PROXY_RANGE blocks. */
function startProxy(target: string): Promise<void> {
  proxy = createServer(async (req, res) => {
    if (proxyDown) {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    if (body.method === 'eth_getLogs') {
      const p = body.params[0];
      const span = Number(BigInt(p.toBlock)) - Number(BigInt(p.fromBlock)) + 1;
      if (span > MAX_PROXY_RANGE) {
        refusals++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: -32005, message: `query exceeds max block range ${MAX_PROXY_RANGE}` } }));
        return;
      }
    }
    const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    res.setHeader('content-type', 'application/json');
    res.end(await upstream.text());
  });
  return new Promise((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
}

beforeAll(async () => {
  chain = await startTestChain({ chainId: CHAIN_ID });
  sql = createSql(inject('databaseUrl'), { max: 3 });
  await startProxy(chain.anvil.rpcUrl);
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  // 12 mints -> 24 passport events over 12 blocks
  for (let i = 0; i < 12; i++) {
    await mined(
      chain,
      chain.wallets[0]!.writeContract({
        address: chain.addresses.passport,
        abi: agentPassportAbi,
        functionName: 'mint',
        args: [privateKeyToAccount(generatePrivateKey()).address, 1, ['api_call'], 1 + (i % 4), `ipfs://${i}`],
      }),
    );
  }
  await mined(
    chain,
    chain.wallets[1]!.writeContract({
      address: chain.addresses.escrow,
      abi: taskEscrowAbi,
      functionName: 'fund',
      args: [keccak256(toHex('big'))],
      value: 2n ** 70n,
    }),
  );
}, 60_000);

afterAll(async () => {
  proxy?.close();
  await sql?.end();
  await chain?.anvil.stop();
});

describe('fetchAndStore', () => {
  it('halves the getLogs range while the RPC refuses it', async () => {
    const client = createEvmPublicClient({ rpcUrl: proxyUrl, chainId: CHAIN_ID });
    const head = Number(await client.getBlockNumber());
    const before = refusals;
    const got = await getLogsAdaptive(client, chain.addresses.passport, 0, head);
    expect(refusals).toBeGreaterThan(before);
    expect(got.range).toBeLessThanOrEqual(MAX_PROXY_RANGE);
    expect(got.toBlock).toBe(got.range - 1);
  });

  it('indexes through the refusing RPC up to head - confirmations, then reports caught up', async () => {
    const client = createEvmPublicClient({ rpcUrl: proxyUrl, chainId: CHAIN_ID });
    const acts = createIndexerActivities({
      sql,
      clients: { [CHAIN_ID]: client },
      sources: [{ chainId: CHAIN_ID, source: 'passport', address: chain.addresses.passport }],
      confirmations: 3,
      maxBlockRange: 16,
    });
    const head = Number(await client.getBlockNumber());
    let range: number | undefined;
    let calls = 0;
    const ranges: number[] = [];
    for (;;) {
      const r = await acts.fetchAndStore({ chainId: CHAIN_ID, source: 'passport', blockRange: range });
      calls++;
      range = r.nextRange;
      ranges.push(r.nextRange);
      if (r.caughtUp) {
        expect(r.checkpoint).toBe(head - 3);
        expect(r.safeHead).toBe(head - 3);
        break;
      }
      if (calls > 50) throw new Error('did not catch up');
    }
    expect(Math.max(...ranges)).toBeLessThanOrEqual(16);
    expect(Math.min(...ranges)).toBeLessThanOrEqual(MAX_PROXY_RANGE); // shrunk to what the RPC accepts
    // exactly the events of blocks <= head - 3
    const logs = await chain.publicClient.getLogs({ address: chain.addresses.passport, fromBlock: 0n, toBlock: BigInt(head - 3) });
    expect(await countEvents(sql, CHAIN_ID, 'passport')).toBe(logs.length);
    // a repeated call does nothing
    const again = await acts.fetchAndStore({ chainId: CHAIN_ID, source: 'passport' });
    expect(again).toMatchObject({ caughtUp: true, events: 0, checkpoint: head - 3 });
  });

  it('throws on an RPC outage and leaves the checkpoint where it was', async () => {
    const client = createEvmPublicClient({ rpcUrl: proxyUrl, chainId: CHAIN_ID, timeout: 2_000 });
    const acts = createIndexerActivities({
      sql,
      clients: { [CHAIN_ID]: client },
      sources: [{ chainId: CHAIN_ID, source: 'escrow', address: chain.addresses.escrow }],
      confirmations: 0,
    });
    proxyDown = true;
    try {
      await expect(acts.fetchAndStore({ chainId: CHAIN_ID, source: 'escrow' })).rejects.toThrow();
    } finally {
      proxyDown = false;
    }
    expect(await getCheckpoint(sql, CHAIN_ID, 'escrow')).toBeUndefined();
    const r = await acts.fetchAndStore({ chainId: CHAIN_ID, source: 'escrow', blockRange: 4 });
    expect(r.fromBlock).toBe(0);
  });

  it('stores uint256 arguments as decimal strings', async () => {
    const acts = createIndexerActivities({
      sql,
      clients: { [CHAIN_ID]: chain.publicClient },
      sources: [{ chainId: CHAIN_ID, source: 'escrow', address: chain.addresses.escrow }],
      confirmations: 0,
      maxBlockRange: 100,
    });
    for (let i = 0; i < 10; i++) {
      if ((await acts.fetchAndStore({ chainId: CHAIN_ID, source: 'escrow' })).caughtUp) break;
    }
    const rows = await sql<{ args: Record<string, unknown> }[]>`
      SELECT args FROM chain_events WHERE chain_id = ${CHAIN_ID} AND event_name = 'TaskFunded'`;
    expect(rows).toHaveLength(1);
    expect(rows[0]!.args.amount).toBe((2n ** 70n).toString());
    expect(rows[0]!.args.poster).toBe(chain.anvil.accounts[1]!.address);
    expect(toJsonSafe({ a: 1n, b: [2n, 'x', { c: 3n }], d: true })).toEqual({ a: '1', b: ['2', 'x', { c: '3' }], d: true });
  });
});
