// The secrets scan itself (issue 13, item 5) can find a secret in each place it looks: a log file, a
// database row (text and bytea) and a workflow history (input payload and failure message), as the
// raw key, its DER form or base64. The scan of a whole run happens in global-setup's teardown
// (test/reliability/secretsTeardown.ts) over the secrets the tests recorded, and fails the run when it
// finds one: this file proves that scan is able to fail.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PrivateKey } from '@hashgraph/sdk';
import { Client, Connection } from '@temporalio/client';
import { createSql, type Sql } from '../../db/client.js';
import { dumpRows, needlesOf, scanForSecrets } from './secretsScan.js';

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
});
