/**
 * The ledger services a process builds from its deployment, in one place (issue 21):
 *
 *   publicLedgerClients(deployment)        the API's: an SDK client WITHOUT an operator (it only names the
 *                                          nodes: every transaction the API builds for a client is frozen
 *                                          with an explicit transaction id and node) and the mirror client,
 *                                          over the deployment's public part (issue 26 item 9: no key)
 *   ledgerClients(deployment)              the worker's: the SDK client with the operator, and the mirror
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
import { escrowKeyProblem, publicDeployment, type LedgerDeployment, type PublicLedgerDeployment } from './deployment.js';
import { MirrorClient } from './mirror.js';
import { IdempotentSubmitter } from './submit.js';

/** The API's view: the deployment's public part and two clients, no key. */
export interface PublicLedgerClients {
  deployment: PublicLedgerDeployment;
  /** SDK client naming the network's nodes; without an operator in the API */
  client: HederaClient;
  mirror: MirrorClient;
}

/** The deployment with its keys and its two clients: the worker's. */
export interface LedgerClients extends PublicLedgerClients {
  deployment: LedgerDeployment;
  /** SDK client with the operator (freezes and signs the service's own transactions) */
  client: HederaClient;
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

/** The API's clients: no operator on the SDK client and no key in the deployment it carries (a copy of the public part). */
export function publicLedgerClients(deployment: PublicLedgerDeployment): PublicLedgerClients {
  const pub = publicDeployment(deployment);
  const client = createLedgerClient({ network: pub.network, node: pub.node, retry: pub.network === 'local' ? LOCAL_RETRY : undefined });
  return { deployment: pub, client, mirror: new MirrorClient(pub.mirrorUrl) };
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
