// The secrets scan itself (issue 13, item 5) can find a secret in each place it looks: a log file, a
// database row (text and bytea) and a workflow history (input payload and failure message), as the
// raw key, its DER form or base64; and in the two places added later: a child process's output
// file (what childWorker.ts writes for every child of a run), a localnet journal and state snapshot
// kept from a stack's data directory (keepLedgerFiles, transactions decoded) and the run's own output
// (keepTestOutput: what scripts/test.ts tees from vitest, native stderr included). The scan of a whole run happens in global-setup's teardown
// (test/reliability/secretsTeardown.ts) over the secrets the tests recorded, and fails the run when it
// finds one: this file proves that scan is able to fail.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PrivateKey, TopicMessageSubmitTransaction, TransferTransaction } from '@hashgraph/sdk';
import { Client, Connection } from '@temporalio/client';
import { createSql, type Sql } from '../../db/client.js';
import { startLocalnet } from '../../localnet/index.js';
import { sdkClient } from '../localnet/harness.js';
import { runLogFile } from '../support/secrets.js';
import { startChildProcess } from './childWorker.js';
import { dumpRows, keepLedgerFiles, needlesOf, scanForSecrets } from './secretsScan.js';
import { keepTestOutput } from './secretsTeardown.js';

describe('secrets scan', () => {
  let dir: string;
  let sql: Sql;
  let connection: Connection;
  let client: Client;
  const table = `secrets_probe_${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-scan-test-'));
    sql = createSql(inject('databaseUrl'), { max: 1 });
    connection = await Connection.connect({ address: inject('temporalAddress') });
    client = new Client({ connection, namespace: 'default' });
  });
  afterAll(async () => {
    await sql?.unsafe(`drop table if exists ${table}`);
    await sql?.end();
    await connection?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds a key in logs, database rows and workflow histories, in each of its forms, and nothing that is not there', async () => {
    const inLog = PrivateKey.generateED25519();
    const inText = PrivateKey.generateECDSA();
    const inBytea = PrivateKey.generateED25519();
    const inInput = `tok_${randomUUID()}`;
    const inFailure = PrivateKey.generateED25519();
    const absent = PrivateKey.generateED25519();

    fs.mkdirSync(path.join(dir, 'logs'));
    fs.writeFileSync(path.join(dir, 'logs', 'api.log'), `{"level":30,"msg":"signing with ${Buffer.from(inLog.toBytesRaw()).toString('base64')}"}\n`);
    await sql.unsafe(`create table ${table} (note text, blob bytea)`);
    await sql.unsafe(`insert into ${table} values ($1, $2)`, [`key=${inText.toStringDer()}`, Buffer.from(inBytea.toBytesRaw())]);
    const dump = path.join(dir, 'run.txt');
    expect(await dumpRows(inject('databaseUrl'), dump)).toBeGreaterThan(0);

    const workflowId = `secrets-probe-${randomUUID()}`;
    // a type no worker runs (not one of ours, so no contract): only the input Temporal stores matters here
    const handle = await client.workflow.start('noSuchWorkflow', { taskQueue: `secrets-probe-${randomUUID()}`, workflowId, args: [{ apiKey: inInput }] });
    await handle.terminate(`operator pasted ${inFailure.toStringRaw()}`);

    const secrets = [
      { label: 'log', value: inLog.toStringDer() },
      { label: 'text', value: inText.toStringDer() },
      { label: 'bytea', value: inBytea.toStringDer() },
      { label: 'input', value: inInput },
      { label: 'failure', value: inFailure.toStringDer() },
      { label: 'absent', value: absent.toStringDer() },
    ];
    expect(needlesOf(inLog.toStringDer())).toContain(Buffer.from(inLog.toBytesRaw()).toString('hex'));
    const report = await scanForSecrets({ secrets, logDir: path.join(dir, 'logs'), dumpFiles: [dump], temporalAddress: inject('temporalAddress') });
    expect(report.found).toEqual(
      expect.arrayContaining(['log in log api.log', 'text in database run', 'bytea in database run', `input in workflow ${workflowId}`, `failure in workflow ${workflowId}`]),
    );
    expect(report.found.filter((f) => f.startsWith('absent'))).toEqual([]);
    expect(report.workflows).toBeGreaterThan(0);
  });

  it('finds a key a child process printed, in its output file', { timeout: 60_000 }, async () => {
    const printed = PrivateKey.generateED25519();
    const entry = path.join(dir, 'leaky.ts');
    fs.writeFileSync(entry, `console.log('ready'); console.error('worker: signing with', process.env.PLANTED); setInterval(() => {}, 1000);\n`);
    const logFile = runLogFile('leaky-child.log', path.join(dir, 'child'))!;
    const child = await startChildProcess({ entry, env: { PLANTED: Buffer.from(printed.toBytesRaw()).toString('hex') }, readyText: 'signing with', logFile, name: 'leaky' });
    await child.kill('SIGKILL'); // what it printed before it was ready is in the file already
    const report = await scanForSecrets({ secrets: [{ label: 'printed', value: printed.toStringDer() }], logDir: path.dirname(logFile) });
    expect(report.found).toEqual(['printed in log leaky-child.log']);
  });

  it("finds a key in the run's own output (what a test process wrote to stderr outside console.*), colour codes and all", () => {
    const written = PrivateKey.generateED25519();
    const hex = Buffer.from(written.toBytesRaw()).toString('hex');
    // as vitest's tee (scripts/test.ts) stores it: a native warning with the key split by a colour code
    const output = path.join(dir, 'output.log');
    fs.writeFileSync(output, `2026-11-24T05:00:00Z WARN temporal_sdk_core: activity failed key=\x1b[31m${hex.slice(0, 20)}\x1b[39m${hex.slice(20)}\n`);
    const logDir = path.join(dir, 'output-logs');
    keepTestOutput(logDir, output);
    expect(fs.readdirSync(logDir)).toEqual(['test-output.log']);
    const report = scanForSecrets({ secrets: [{ label: 'written', value: written.toStringDer() }], logDir });
    return expect(report).resolves.toMatchObject({ found: ['written in log test-output.log'] });
  });

  it('finds a key in a localnet journal and state snapshot (in a memo, and as raw bytes of a message), not the key stores it leaves behind', { timeout: 60_000 }, async () => {
    const inMemo = PrivateKey.generateED25519();
    const inMessage = PrivateKey.generateECDSA();
    const dataDir = path.join(dir, 'ln-data');
    const ln = await startLocalnet({ dataDir, grpcPort: 0, mirrorPort: 0, facilitator: false });
    const [a, b] = ln.config.accounts;
    const client = sdkClient(ln.config, a);
    try {
      const transfer = new TransferTransaction().addHbarTransfer(a.accountId, -1).addHbarTransfer(b.accountId, 1).setTransactionMemo(inMemo.toStringDer());
      await (await transfer.execute(client)).getReceipt(client);
      const message = new TopicMessageSubmitTransaction().setTopicId(ln.config.topics.a2a).setMessage(inMessage.toBytesRaw());
      await (await message.execute(client)).getReceipt(client);
    } finally {
      client.close();
      await ln.stop();
    }
    const kept = path.join(dir, 'kept-localnet');
    keepLedgerFiles(dataDir, kept);
    // localnet-state.json and localnet.json (the key stores) stay behind; the state snapshot is kept
    expect(fs.readdirSync(kept).sort()).toEqual(['journal.jsonl', 'snapshot.v8']);
    const journal = fs.readFileSync(path.join(kept, 'journal.jsonl'), 'utf8');
    expect(journal.toLowerCase()).not.toContain(Buffer.from(inMessage.toBytesRaw()).toString('hex')); // only the decoded transaction shows it

    const secrets = [
      { label: 'memo', value: inMemo.toStringDer() },
      { label: 'message', value: inMessage.toStringDer() },
      { label: 'operator', value: ln.config.operator.privateKey },
      { label: 'agent', value: ln.config.accounts[0].privateKey },
    ];
    const report = await scanForSecrets({ secrets, ledgerDir: kept });
    // the snapshot holds the memo as text and the message as raw bytes (searched as hex)
    expect(report.found.sort()).toEqual([
      'memo in localnet journal.jsonl',
      'memo in localnet snapshot.v8',
      'message in localnet journal.jsonl',
      'message in localnet snapshot.v8',
    ]);
    expect(report.transactions).toBeGreaterThan(10); // the bootstrap's and ours
    expect(report.ledgerFiles).toBe(2);
  });
});
