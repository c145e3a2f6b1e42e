/**
 * `npm run temporal:setup` (scripts/temporal-setup.ts) and the cluster launcher: makes a namespace
 * ready for this service on any Temporal cluster, idempotently. It creates the namespace with its
 * retention (or sets the retention of an existing one), registers every custom search attribute of
 * SEARCH_ATTRIBUTES that is missing, and returns once the frontend lists them all (the cluster's
 * caches catch up within seconds). Temporal Cloud creates namespaces and search attributes through
 * its own control plane (tcld, the Cloud UI or the Cloud Ops API), not through these calls: there the
 * function says what to run instead and fails.
 */
import { status } from '@grpc/grpc-js';
import type { Connection } from '@temporalio/client';
import { msNumberToTs } from '@temporalio/common/lib/time.js';
import { INDEXED_VALUE_TYPE, SEARCH_ATTRIBUTES, searchAttributeProblems } from './searchAttributes.js';

export interface SetupOptions {
  connection: Pick<Connection, 'workflowService' | 'operatorService'>;
  namespace: string;
  retentionDays: number;
  log: (line: string) => void;
  /** how long to wait for the cluster to list what was registered */
  settleMs?: number;
}

export interface SetupResult {
  namespaceCreated: boolean;
  retentionChanged: boolean;
  searchAttributesAdded: string[];
}

const DAY_S = 86_400;
const grpcCode = (err: unknown): number | undefined => (err as { code?: number }).code;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class SetupError extends Error {}

function cloudHint(o: SetupOptions, what: string): string {
  const sas = Object.entries(SEARCH_ATTRIBUTES).map(([n, t]) => `--search-attribute "${n}=${t}"`).join(' ');
  return what === 'namespace'
    ? `the cluster refused to create namespace "${o.namespace}" (Temporal Cloud creates namespaces in its control plane): create it with \`tcld namespace create --namespace ${o.namespace} --retention-days ${o.retentionDays} ...\` or the Cloud UI, then run this again`
    : `the cluster refused to add search attributes (on Temporal Cloud they are added in its control plane): \`tcld namespace search-attributes add --namespace ${o.namespace} ${sas}\`, then run this again`;
}

export async function setupNamespace(o: SetupOptions): Promise<SetupResult> {
  const { workflowService, operatorService } = o.connection;
  const retentionSeconds = Math.round(o.retentionDays * DAY_S);
  const result: SetupResult = { namespaceCreated: false, retentionChanged: false, searchAttributesAdded: [] };
  const settleUntil = Date.now() + (o.settleMs ?? 60_000);

  // 1. the namespace and its retention
  const describe = () => workflowService.describeNamespace({ namespace: o.namespace });
  let current = await describe().catch((err) => {
    if (grpcCode(err) === status.NOT_FOUND) return null;
    throw err;
  });
  if (!current) {
    try {
      await workflowService.registerNamespace({ namespace: o.namespace, workflowExecutionRetentionPeriod: msNumberToTs(retentionSeconds * 1000), description: 'agent-passport' });
      result.namespaceCreated = true;
      o.log(`namespace ${o.namespace}: created (retention ${o.retentionDays} days)`);
    } catch (err) {
      const code = grpcCode(err);
      if (code === status.ALREADY_EXISTS) o.log(`namespace ${o.namespace}: created by someone else meanwhile`);
      else if (code === status.PERMISSION_DENIED || code === status.UNIMPLEMENTED) throw new SetupError(cloudHint(o, 'namespace'));
      else throw err;
    }
    // the frontend's namespace cache refreshes every few seconds
    for (;;) {
      current = await describe().catch((err) => {
        if (grpcCode(err) === status.NOT_FOUND) return null;
        throw err;
      });
      if (current) break;
      if (Date.now() > settleUntil) throw new SetupError(`namespace ${o.namespace} was registered but is not visible after ${o.settleMs ?? 60_000} ms`);
      await sleep(500);
    }
  } else {
    const have = Number(current.config?.workflowExecutionRetentionTtl?.seconds ?? 0);
    if (have !== retentionSeconds) {
      try {
        await workflowService.updateNamespace({ namespace: o.namespace, config: { workflowExecutionRetentionTtl: msNumberToTs(retentionSeconds * 1000) } });
        result.retentionChanged = true;
        o.log(`namespace ${o.namespace}: retention ${Math.round(have / DAY_S)} -> ${o.retentionDays} days`);
      } catch (err) {
        const code = grpcCode(err);
        if (code !== status.PERMISSION_DENIED && code !== status.UNIMPLEMENTED) throw err;
        o.log(`namespace ${o.namespace}: retention is ${Math.round(have / DAY_S)} days and this credential may not change it (set it in the Cloud UI or with tcld)`);
      }
    } else {
      o.log(`namespace ${o.namespace}: exists (retention ${o.retentionDays} days)`);
    }
  }

  // 2. the search attributes (a namespace just created may be NOT_FOUND here for a few seconds more:
  // each service refreshes its namespace cache on its own)
  const listed = async () => {
    for (;;) {
      try {
        return await searchAttributeProblems(o.connection, o.namespace);
      } catch (err) {
        if (grpcCode(err) !== status.NOT_FOUND || Date.now() > settleUntil) throw err;
        await sleep(500);
      }
    }
  };
  const problems = await listed();
  if (problems.wrongType.length) {
    throw new SetupError(
      `search attributes registered with another type (a type cannot change; remove them or use a new namespace): ${problems.wrongType.map((p) => `${p.name} is ${p.have}, needs ${p.want}`).join(', ')}`,
    );
  }
  if (problems.missing.length) {
    const searchAttributes = Object.fromEntries(problems.missing.map((n) => [n, INDEXED_VALUE_TYPE[SEARCH_ATTRIBUTES[n]!]]));
    try {
      await operatorService.addSearchAttributes({ namespace: o.namespace, searchAttributes });
    } catch (err) {
      const code = grpcCode(err);
      if (code === status.PERMISSION_DENIED || code === status.UNIMPLEMENTED) throw new SetupError(cloudHint(o, 'search attributes'));
      // ALREADY_EXISTS: another setup run added them meanwhile; the listing below decides
      if (code !== status.ALREADY_EXISTS) throw err;
    }
    result.searchAttributesAdded = problems.missing;
    o.log(`search attributes added: ${problems.missing.map((n) => `${n} (${SEARCH_ATTRIBUTES[n]})`).join(', ')}`);
  } else {
    o.log(`search attributes: all ${Object.keys(SEARCH_ATTRIBUTES).length} registered`);
  }
  for (;;) {
    const left = await listed();
    if (!left.missing.length) break;
    if (Date.now() > settleUntil) throw new SetupError(`search attributes still not listed after ${o.settleMs ?? 60_000} ms: ${left.missing.join(', ')}`);
    await sleep(500);
  }
  return result;
}
