/** Builds the ledger pieces a process needs from its deployment: SDK client and mirror client. */
import { createLedgerClient, LOCAL_RETRY } from './client.js';
import type { LedgerDeployment } from './deployment.js';
import { MirrorClient } from './mirror.js';

export function ledgerClients(deployment: LedgerDeployment) {
  const client = createLedgerClient({
    network: deployment.network,
    node: deployment.node,
    operator: deployment.operator,
    retry: deployment.network === 'local' ? LOCAL_RETRY : undefined,
  });
  const mirror = new MirrorClient(deployment.mirrorUrl);
  return { client, mirror };
}
