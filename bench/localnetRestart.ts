/**
 * Localnet restart time: a full journal replay (every transaction parsed and its signatures verified
 * again, what a restart did before snapshots) next to a restart from the state snapshot, after a
 * clean stop and after a kill (the snapshot behind the journal by the entries since it was written).
 * Also the time one snapshot write blocks the node at that size.
 *
 *   npx tsx bench/localnetRestart.ts            (BENCH_TX transactions, default 10,000)
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AccountId, PrivateKey, Timestamp, TopicMessageSubmitTransaction, TransactionId, TransferTransaction } from '@hashgraph/sdk';
import { startLocalnet, type Localnet } from '../localnet/index.js';
import { proto } from '../localnet/proto.js';
import { fmt, log, table } from './lib.js';

const count = Math.max(2_000, Number(process.env.BENCH_TX ?? 10_000));
const dataDir = mkdtempSync(join(tmpdir(), 'bench-localnet-'));
const open = (dir: string) => startLocalnet({ dataDir: dir, grpcPort: 0, mirrorPort: 0, facilitatorPort: 0, facilitator: false });

async function timedStart(dir: string): Promise<{ ms: number; net: Localnet }> {
  const t0 = performance.now();
  const net = await open(dir);
  return { ms: performance.now() - t0, net };
}

try {
  const net = await open(dataDir);
  const cfg = net.config;
  // Payers: the operator (ED25519, the service's own writes) for two transactions in three, the
  // agents (ED25519 and ECDSA secp256k1 alternately, 1,000 HBAR each) for the third.
  const agents = cfg.accounts.map((a) => ({ id: AccountId.fromString(a.accountId), key: PrivateKey.fromStringDer(a.privateKey) }));
  const operator = { id: AccountId.fromString(cfg.operator.accountId), key: PrivateKey.fromStringDer(cfg.operator.privateKey) };
  const node = [AccountId.fromString('0.0.3')];
  log(`signing and submitting ${fmt(count)} transactions...`);
  const periodic = join(dataDir, 'periodic.v8');
  for (let i = 0; i < count; i++) {
    if (i === count - 999) {
      // The periodic snapshot is written between two requests; the worst case a kill finds is the
      // one taken 999 entries before the end.
      await new Promise((r) => setImmediate(r));
      copyFileSync(join(dataDir, 'snapshot.v8'), periodic);
    }
    const a = i % 3 === 2 ? agents[Math.floor(i / 3) % agents.length]! : operator;
    const txId = TransactionId.withValidStart(a.id, new Timestamp(Math.floor(Date.now() / 1000) - 5, i)); // unique nanos
    const tx =
      i % 4 === 3
        ? new TopicMessageSubmitTransaction().setTopicId(cfg.topics.a2a).setMessage(`bench ${i}`)
        : new TransferTransaction().addHbarTransfer(a.id, -1).addHbarTransfer(cfg.payTo, 1);
    const signed = await tx.setTransactionId(txId).setNodeAccountIds(node).freeze().sign(a.key);
    // toBytes() is a TransactionList (one entry per node); the node takes one Transaction.
    const one = proto.TransactionList.decode(signed.toBytes()).transactionList[0]!;
    const code = net.engine.submit(proto.Transaction.encode(one).finish(), { ignoreFaults: true });
    if (code !== 0) throw new Error(`transaction ${i} refused at precheck: ${code}`);
    if (i % 5000 === 4999) log(`  ${fmt(i + 1)}`);
  }
  const t0 = performance.now();
  net.engine.writeSnapshot();
  const writeMs = performance.now() - t0;
  await net.stop();

  const clean = await timedStart(dataDir);
  const entries = clean.net.engine.lastReplay;
  await clean.net.stop();

  copyFileSync(periodic, join(dataDir, 'snapshot.v8'));
  const killed = await timedStart(dataDir);
  const killedReplayed = killed.net.engine.lastReplay.replayed;
  await killed.net.stop();

  rmSync(join(dataDir, 'snapshot.v8'));
  const full = await timedStart(dataDir);
  const fullReplayed = full.net.engine.lastReplay.replayed;
  await full.net.stop();

  table(`localnet restart, ${fmt(fullReplayed)} journal entries`, ['start', 'replayed', 'ms', 'vs full replay'], [
    ['full replay (baseline)', fmt(fullReplayed), fmt(full.ms), '100%'],
    ['snapshot, after a clean stop', fmt(entries.replayed), fmt(clean.ms), `${fmt((clean.ms / full.ms) * 100, 1)}%`],
    ['snapshot, after a kill', fmt(killedReplayed), fmt(killed.ms), `${fmt((killed.ms / full.ms) * 100, 1)}%`],
  ]);
  console.log(`\none snapshot write at this size: ${fmt(writeMs)} ms`);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
