/**
 * The ledger services a process builds from its deployment, in one place (issue 21):
 *
 *   ledgerClients(deployment)              the SDK client (with the operator) and the mirror client: what
 *                                          the API needs (it signs in-process and never submits)
 *   createLedgerServices(deployment, sql)  those and the idempotent submitter every ledger write goes
 *                                          through (ledger/submit.ts): what ledger activities run on
 *   escrowKeyCheck(services)               the worker's start-up check that the escrow key signs for the
 *                                          escrow account
 *
 * The worker (worker/index.ts), the e2e harness, the benches and the chaos harness all build their
 * services here, so a new member (or a change of how one is built) is made once.
 */
import type { Client as HederaClient } from '@hashgraph/sdk';
import type { Sql } from 'postgres';
import { createLedgerClient, LOCAL_RETRY } from './client.js';
import { escrowKeyProblem, type LedgerDeployment } from './deployment.js';
import { MirrorClient } from './mirror.js';
import { IdempotentSubmitter } from './submit.js';

/** The deployment and its two clients. */
export interface LedgerClients {
  deployment: LedgerDeployment;
  /** SDK client with the operator (freezes and signs the service's own transactions) */
  client: HederaClient;
  mirror: MirrorClient;
}

/** What ledger activities run on: the clients and the idempotent submitter over PostgreSQL. */
export interface LedgerServices extends LedgerClients {
  /** every ledger write of the service goes through it (ledger/submit.ts) */
  submitter: IdempotentSubmitter;
}

export function ledgerClients(deployment: LedgerDeployment): LedgerClients {
  const client = createLedgerClient({
    network: deployment.network,
    node: deployment.node,
    operator: deployment.operator,
    retry: deployment.network === 'local' ? LOCAL_RETRY : undefined,
  });
  const mirror = new MirrorClient(deployment.mirrorUrl);
  return { deployment, client, mirror };
}

/**
 * The ledger services of a process. `from` is the deployment (new clients are built) or clients
 * already built for it (a test or bench whose API shares them with its worker).
 */
export function createLedgerServices(from: LedgerDeployment | LedgerClients, deps: { sql: Sql }): LedgerServices {
  const clients = 'mirror' in from ? from : ledgerClients(from);
  const { deployment, client, mirror } = clients;
  return { deployment, client, mirror, submitter: new IdempotentSubmitter({ sql: deps.sql, client, mirror }) };
}

/**
 * The escrow key signs payouts and refunds (issue 19): the worker refuses to start with a key that is
 * not the escrow account's. Throws then; a mirror that cannot be asked is only reported through `warn`
 * (the first payout would say).
 */
export async function escrowKeyCheck(services: LedgerClients, warn: (line: string) => void): Promise<void> {
  const problem = await escrowKeyProblem(services.mirror, services.deployment).catch((e: Error) => {
    warn(`could not check the escrow key on the mirror (${e.message})`);
    return null;
  });
  if (problem) throw new Error(problem);
}
