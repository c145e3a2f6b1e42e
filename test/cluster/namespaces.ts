/**
 * The namespaces of a Temporal server the cluster run started (each cluster test file works in one of
 * its own, test/cluster/stack.ts clusterNamespace): every namespace but the server's own
 * `temporal-system`. The secrets scan at the end of the run reads the histories of all of them.
 */
import type { Connection } from '@temporalio/client';

export async function userNamespaces(connection: Connection): Promise<string[]> {
  const names: string[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await connection.workflowService.listNamespaces({ pageSize: 100, nextPageToken });
    for (const ns of page.namespaces ?? []) {
      const name = ns.namespaceInfo?.name;
      if (name && name !== 'temporal-system') names.push(name);
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return names.sort();
}
