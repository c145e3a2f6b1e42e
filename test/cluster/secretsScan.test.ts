// The secrets scan at the end of `npm run test:cluster` (test/cluster/global-setup.ts) reads the workflow
// histories of every namespace the cluster tests made on the server (each test file works in one of
// its own), not only `default`: a text planted in a workflow of a test namespace is found.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { scanForSecrets } from '../reliability/secretsScan.js';
import { userNamespaces } from './namespaces.js';
import { clusterNamespace } from './stack.js';

let ns: Awaited<ReturnType<typeof clusterNamespace>> | undefined;
afterAll(async () => {
  await ns?.close();
});

describe('the secrets scan of the cluster run', () => {
  it('reads the histories of every test namespace', async () => {
    ns = await clusterNamespace('scan');
    // a workflow no worker runs, whose input carries a planted text (not a recorded secret: the run's
    // own scan must stay clean); its start event holds the input
    const planted = `planted-${randomBytes(12).toString('hex')}`;
    const handle = await ns.client.workflow.start('noSuchWorkflow', { taskQueue: `scan-${randomBytes(3).toString('hex')}`, workflowId: `scan-${randomBytes(3).toString('hex')}`, args: [{ note: planted }] });
    await handle.terminate('planted for the scan test');

    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const namespaces = await userNamespaces(connection).finally(() => connection.close());
    expect(namespaces).toContain(ns.namespace);
    expect(namespaces).toContain('default');
    expect(namespaces).not.toContain('temporal-system');

    const secrets = [{ label: 'planted', value: planted }];
    const all = await scanForSecrets({ secrets, temporalAddress: inject('temporalAddress'), namespaces });
    expect(all.found).toEqual([`planted in workflow ${ns.namespace}/${handle.workflowId}`]);
    expect(all.namespaces).toBe(namespaces.length);
    // what the scan read before: the default namespace alone, where no cluster test works
    const defaultOnly = await scanForSecrets({ secrets, temporalAddress: inject('temporalAddress') });
    expect(defaultOnly.found).toEqual([]);
  });
});
