/**
 * Benchmark of the chain indexer (never run by `npm test`):
 *   npx tsx bench/indexer.ts            (BENCH_EVENTS=50000 BENCH_EVENTS_PER_TX=500 BENCH_BLOCK_RANGE=2000)
 *
 * On a fresh anvil it deploys BenchEmitter (events with TaskEscrow's exact signatures, many per
 * transaction; automine: one block per transaction), then measures in the same run:
 *   - raw eth_getLogs read rate over the same block ranges the indexer uses,
 *   - getLogs + ABI decoding,
 *   - the indexer activity (fetchAndStore: reorg check, getLogs, decode, one DB transaction per range),
 * and prints events/s side by side. PostgreSQL: DATABASE_URL, else 127.0.0.1:5432, else embedded;
 * a throwaway database is created and dropped.
 */
import { performance } from 'node:perf_hooks';
import type { Abi, Address, Log } from 'viem';
import { startAnvil } from '../evm/anvil.js';
import { createEvmPublicClient, createEvmWalletClient } from '../evm/clients.js';
import { benchEmitterAbi, taskEscrowAbi } from '../evm/abis.js';
import { benchEmitterBytecode } from '../evm/bytecode.js';
import { createSql } from '../db/client.js';
import { createIndexerActivities, decodeLogs, getLogsAdaptive } from '../activities/evm/indexer.js';
import { countEvents } from '../db/queries/chainEvents.js';
import { throwawayDatabase } from './lib.js';

const N = Number(process.env.BENCH_EVENTS ?? 50_000);
const PER_TX = Number(process.env.BENCH_EVENTS_PER_TX ?? 500);
const RANGE = Number(process.env.BENCH_BLOCK_RANGE ?? 2_000);
const SMALL_RANGE = Number(process.env.BENCH_SMALL_RANGE ?? 10);
const CHAIN_ID = 31337;

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

async function main() {
  const log = (s: string) => process.stderr.write(`${s}\n`);
  const anvil = await startAnvil({ port: 0, chainId: CHAIN_ID });
  const db = await throwawayDatabase('indexer');
  const url = db.url;
  const sql = createSql(url, { max: 4 });
  try {
    const ep = { rpcUrl: anvil.rpcUrl, chainId: anvil.chainId };
    const client = createEvmPublicClient(ep);
    const wallet = createEvmWalletClient(ep, anvil.accounts[0]!.privateKey);

    // ---- produce N events
    const deployHash = await wallet.deployContract({ abi: benchEmitterAbi, bytecode: benchEmitterBytecode });
    const emitter = (await client.waitForTransactionReceipt({ hash: deployHash })).contractAddress as Address;
    const t0 = performance.now();
    let produced = 0;
    while (produced < N) {
      const count = Math.min(PER_TX, N - produced);
      const hash = await wallet.writeContract({ address: emitter, abi: benchEmitterAbi, functionName: 'emitMany', args: [BigInt(produced + 1), BigInt(count)], gas: 29_000_000n });
      const r = await client.waitForTransactionReceipt({ hash });
      if (r.status !== 'success') throw new Error('emitMany reverted');
      produced += count;
    }
    const produceMs = performance.now() - t0;
    const head = Number(await client.getBlockNumber({ cacheTime: 0 }));
    log(`produced ${fmt(produced)} events in ${head} blocks (${(produceMs / 1000).toFixed(1)} s)`);

    // ---- raw getLogs read rate, over the same ranges as the indexer
    async function rawRead(range: number, decode: boolean): Promise<{ n: number; ms: number }> {
      const start = performance.now();
      let n = 0;
      // same range logic as the indexer: halve while the answer is refused (e.g. over viem's 10 MiB cap)
      for (let from = 0; from <= head; ) {
        const to = Math.min(from + range - 1, head);
        const got = await getLogsAdaptive(client, emitter, from, to);
        const logs = got.logs;
        from = got.toBlock + 1;
        if (decode) n += decodeLogs({ chainId: CHAIN_ID, source: 'escrow', abi: taskEscrowAbi as Abi }, logs as Log[]).rows.length;
        else n += logs.length;
      }
      return { n, ms: performance.now() - start };
    }

    // ---- the indexer activity (as the workflow calls it) on a clean index
    async function indexRun(range: number): Promise<{ n: number; ms: number; calls: number }> {
      await sql`DELETE FROM chain_events WHERE chain_id = ${CHAIN_ID}`;
      await sql`DELETE FROM indexer_checkpoints WHERE chain_id = ${CHAIN_ID}`;
      await sql`DELETE FROM indexer_block_hashes WHERE chain_id = ${CHAIN_ID}`;
      const acts = createIndexerActivities({
        sql,
        clients: { [CHAIN_ID]: client },
        sources: [{ chainId: CHAIN_ID, source: 'escrow', address: emitter }],
        confirmations: 0,
        maxBlockRange: range,
      });
      const start = performance.now();
      let calls = 0;
      let blockRange: number | undefined;
      for (;;) {
        const r = await acts.fetchAndStore({ chainId: CHAIN_ID, source: 'escrow', blockRange });
        calls++;
        blockRange = r.nextRange;
        if (r.caughtUp) break;
      }
      const ms = performance.now() - start;
      const n = await countEvents(sql, CHAIN_ID, 'escrow');
      return { n, ms, calls };
    }

    // warm-up (connections, JIT) on a small range
    await rawRead(RANGE, false);

    const rows: { what: string; range: number; events: number; ms: number; extra?: string }[] = [];
    const raw = await rawRead(RANGE, false);
    rows.push({ what: 'raw eth_getLogs', range: RANGE, events: raw.n, ms: raw.ms });
    const dec = await rawRead(RANGE, true);
    rows.push({ what: 'eth_getLogs + decodeEventLog', range: RANGE, events: dec.n, ms: dec.ms });
    const idx = await indexRun(RANGE);
    rows.push({ what: 'indexer fetchAndStore (DB tx)', range: RANGE, events: idx.n, ms: idx.ms, extra: `${idx.calls} calls` });
    const rawSmall = await rawRead(SMALL_RANGE, false);
    rows.push({ what: 'raw eth_getLogs', range: SMALL_RANGE, events: rawSmall.n, ms: rawSmall.ms });
    const idxSmall = await indexRun(SMALL_RANGE);
    rows.push({ what: 'indexer fetchAndStore (DB tx)', range: SMALL_RANGE, events: idxSmall.n, ms: idxSmall.ms, extra: `${idxSmall.calls} calls` });

    for (const r of rows) if (r.events !== produced) throw new Error(`${r.what} saw ${r.events} events, expected ${produced}`);

    const header = ['measurement', 'blocks/range', 'events', 'seconds', 'events/s', 'vs raw', 'notes'];
    const rawRate = (range: number) => {
      const r = rows.find((x) => x.what === 'raw eth_getLogs' && x.range === range)!;
      return r.events / (r.ms / 1000);
    };
    const table = rows.map((r) => {
      const rate = r.events / (r.ms / 1000);
      return [r.what, String(r.range), fmt(r.events), (r.ms / 1000).toFixed(2), fmt(rate), `${((rate / rawRate(r.range)) * 100).toFixed(0)}%`, r.extra ?? ''];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 || i === 6 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
    console.log(`\nchain indexer benchmark: ${fmt(produced)} events, ${PER_TX}/tx, ${head} blocks, anvil ${anvil.rpcUrl}, node ${process.version}`);
    console.log(line(header));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const row of table) console.log(line(row));
  } finally {
    await sql.end();
    await anvil.stop();
    await db.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
