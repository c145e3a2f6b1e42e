// Shared setup for the localnet conformance tests: a localnet on free ports in a temp dir, and SDK
// clients configured to fail fast.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountBalanceQuery, AccountId, Client, PrivateKey } from '@hashgraph/sdk';
import { startLocalnet, type Localnet, type LocalnetConfig } from '../../localnet/index.js';

export function tempDataDir(prefix: string): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `localnet-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function startTestLocalnet(dataDir: string): Promise<Localnet> {
  return startLocalnet({ dataDir, grpcPort: 0, mirrorPort: 0, facilitatorPort: 0, facilitator: false });
}

/** An SDK client talking to the localnet node, with short timeouts and backoffs. */
export function sdkClient(cfg: LocalnetConfig, operator?: { accountId: string; privateKey: string }): Client {
  const op = operator ?? cfg.operator;
  const client = Client.forNetwork({ [cfg.node.address]: AccountId.fromString(cfg.node.accountId) });
  client.setOperator(AccountId.fromString(op.accountId), PrivateKey.fromStringDer(op.privateKey));
  client.setGrpcDeadline(5_000);
  client.setRequestTimeout(20_000);
  client.setMinBackoff(50);
  client.setMaxBackoff(500);
  client.setMaxAttempts(10);
  client.setNodeMinBackoff(100);
  client.setNodeMaxBackoff(1_000);
  client.setNodeMinReadmitPeriod(100);
  client.setNodeMaxReadmitPeriod(1_000);
  return client;
}

/** An account's HBAR balance in tinybars, by a balance query through the given client. */
export async function tinybarBalance(c: Client, id: string | AccountId): Promise<bigint> {
  const b = await new AccountBalanceQuery().setAccountId(id).execute(c);
  return BigInt(b.hbars.toTinybars().toString());
}

export async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.json() };
}

/** Run `fn` and return the HAPI status name of the error it throws (PrecheckStatusError / ReceiptStatusError). */
export async function statusOf(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (e) {
    const status = (e as { status?: { toString(): string } }).status;
    if (status) return status.toString();
    throw e;
  }
  return 'NO_ERROR';
}

export interface OpenLocalnet {
  tmp: { dir: string; cleanup(): void };
  net: Localnet;
  /** an SDK client with the operator (0.0.2) */
  client: Client;
  opKey: PrivateKey;
}

/** A localnet in a temp dir with an operator SDK client, for a test file's beforeAll. */
export async function openTestLocalnet(prefix: string): Promise<OpenLocalnet> {
  const tmp = tempDataDir(prefix);
  const net = await startTestLocalnet(tmp.dir);
  return { tmp, net, client: sdkClient(net.config), opKey: PrivateKey.fromStringDer(net.config.operator.privateKey) };
}

/** afterAll counterpart of openTestLocalnet (tolerates a setup that failed half-way). */
export async function closeTestLocalnet(o: Partial<OpenLocalnet>): Promise<void> {
  o.client?.close();
  await o.net?.stop();
  o.tmp?.cleanup();
}
