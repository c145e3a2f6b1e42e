/**
 * The public-network bootstrap, run against a localnet node as if it were testnet: it creates the
 * passport collection and the four topics with the operator, and the deployment it describes
 * (without the operator key) is what the API and the worker load.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrivateKey, TokenCreateTransaction, TokenType } from '@hashgraph/sdk';
import { bootstrapNetwork, migratePassportCollection, passportCollectionProblems, type DeploymentFile } from '../../ledger/bootstrapNetwork.js';
import { createLedgerClient } from '../../ledger/client.js';
import { parsePrivateKey } from '@agent-passport/core/keys';
import { MirrorClient } from '../../ledger/mirror.js';
import { escrowKeyProblem, loadLedgerDeployment } from '../../ledger/deployment.js';
import { freezeAccount, mintNft, transferNft } from '../../ledger/operations.js';
import { LedgerError } from '../../ledger/errors.js';
import { startLocalnet, type Localnet } from '../../localnet/index.js';
import { testConfig } from '../support/app.js';

describe('bootstrapNetwork', () => {
  let net: Localnet;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bootstrap-'));
  beforeAll(async () => {
    net = await startLocalnet({ dataDir: path.join(dir, 'localnet'), grpcPort: 0, mirrorPort: 0, facilitator: false });
  });
  afterAll(async () => {
    await net?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates the collection and topics and writes a key-free deployment the services load', async () => {
    const op = net.config.operator;
    const escrowKey = PrivateKey.generateED25519();
    const client = createLedgerClient({ network: 'local', node: net.config.node, operator: op });
    try {
      const file = await bootstrapNetwork({
        client,
        network: 'local',
        node: net.config.node,
        operator: { accountId: op.accountId, privateKey: parsePrivateKey(op.privateKey) },
        mirrorUrl: net.mirrorUrl,
        escrowKey,
      });
      expect(JSON.stringify(file)).not.toContain(op.privateKey);
      expect(JSON.stringify(file)).not.toContain(escrowKey.toStringDer());
      expect(file.passportTokenId).not.toBe(net.config.passportTokenId); // a new collection
      expect(Object.keys(file.topics).sort()).toEqual(['a2a', 'audit', 'directory', 'marketplace']);

      const mirror = new MirrorClient(net.mirrorUrl);
      // money received (payTo: x402 payments), fees taken (treasury: marketplace fees, the passports before
      // delivery) and fees paid (the operator) are three accounts (issue 26 item 9), each its own
      const accounts = [op.accountId, file.treasury, file.payTo, file.escrow];
      expect(new Set(accounts).size, JSON.stringify(accounts)).toBe(4);
      const opKeyRaw = parsePrivateKey(op.privateKey).publicKey.toStringRaw();
      for (const id of [file.treasury, file.payTo]) {
        const account = await mirror.getAccount(id);
        expect(account?.key?.key, id).toBe(opKeyRaw); // the worker signs for them with the operator's key
        expect(BigInt(account!.balance.balance), id).toBe(0n); // so their balances are exactly what they received
      }
      const token = await mirror.get<Record<string, any>>(`/tokens/${file.passportTokenId}`);
      expect(token).toMatchObject({ type: 'NON_FUNGIBLE_UNIQUE', treasury_account_id: file.treasury });
      const opKey = Buffer.from(parsePrivateKey(op.privateKey).publicKey.toBytesRaw()).toString('hex');
      for (const k of ['admin_key', 'supply_key', 'wipe_key', 'metadata_key', 'freeze_key']) expect(token![k].key).toBe(opKey);
      expect(token!.freeze_default).toBe(false);

      const deploymentPath = path.join(dir, 'testnet-like.json');
      fs.writeFileSync(deploymentPath, JSON.stringify(file));
      const deployment = loadLedgerDeployment(testConfig({ LOCALNET_CONFIG_PATH: deploymentPath, HEDERA_OPERATOR_KEY: op.privateKey, ESCROW_PRIVATE_KEY: escrowKey.toStringDer() }));
      expect(deployment.operator).toEqual({ accountId: op.accountId, privateKey: op.privateKey });
      // the escrow (issue 19): an account of its own, with the key the caller keeps, holding nothing
      expect(deployment.escrow).not.toBe(op.accountId);
      expect(deployment.escrowPrivateKey).toBe(escrowKey.toStringDer());
      const escrowAccount = await mirror.getAccount(deployment.escrow);
      expect(escrowAccount?.key?.key).toBe(escrowKey.publicKey.toStringRaw());
      expect(BigInt(escrowAccount!.balance.balance)).toBe(0n);
      // the worker's start-up check: the escrow key must be the escrow account's
      expect(await escrowKeyProblem(mirror, deployment)).toBeNull();
      expect(await escrowKeyProblem(mirror, { escrow: deployment.escrow, escrowPrivateKey: op.privateKey })).toMatch(/not the key of the escrow account/);
      // production refuses an escrow that is the operator's own account
      const shared = path.join(dir, 'shared-escrow.json');
      fs.writeFileSync(shared, JSON.stringify({ ...file, escrow: op.accountId }));
      expect(() => loadLedgerDeployment(testConfig({ NODE_ENV: 'production', LOCALNET_CONFIG_PATH: shared, HEDERA_OPERATOR_KEY: op.privateKey }))).toThrow(/account of its own/);
      const minted = await mintNft(client, { tokenId: deployment.passportTokenId, metadata: [new TextEncoder().encode('ap/1 tier=bronze caps=api_call')] });
      expect(minted.serials).toEqual(['1']); // ReceiptSummary carries serials as decimal strings
      // the operator's client delivers from the treasury (its key is the operator's)
      const holder = net.config.accounts[0]!.accountId;
      const delivered = await transferNft(client, { tokenId: deployment.passportTokenId, serial: 1, from: deployment.treasury, to: holder });
      expect(delivered.status).toBe('SUCCESS');
    } finally {
      client.close();
    }
  });

  it('migration: a collection created without a freeze key is reported, and a new collection replaces it, topics unchanged', async () => {
    const op = net.config.operator;
    const opKey = parsePrivateKey(op.privateKey);
    const client = createLedgerClient({ network: 'local', node: net.config.node, operator: op });
    const mirror = new MirrorClient(net.mirrorUrl);
    try {
      // a deployment made before passports were non-transferable: no freeze key on its collection
      const old = await (
        await new TokenCreateTransaction()
          .setTokenName('Agent Passport')
          .setTokenSymbol('AGENTPASS')
          .setTokenType(TokenType.NonFungibleUnique)
          .setTreasuryAccountId(op.accountId)
          .setAdminKey(opKey.publicKey)
          .setSupplyKey(opKey.publicKey)
          .setWipeKey(opKey.publicKey)
          .setMetadataKey(opKey.publicKey)
          .execute(client)
      ).getReceipt(client);
      const oldTokenId = old.tokenId!.toString();
      const file: DeploymentFile = {
        network: 'local', node: net.config.node, mirrorUrl: net.mirrorUrl, operator: { accountId: op.accountId },
        treasury: op.accountId, escrow: op.accountId, payTo: op.accountId, passportTokenId: oldTokenId, topics: net.config.topics,
      };
      const problems = await passportCollectionProblems(mirror, oldTokenId);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/no freeze key/);
      const freezeOld = await freezeAccount(client, { tokenId: oldTokenId, accountId: net.config.accounts[0].accountId, frozen: true }).catch((e: unknown) => e);
      expect((freezeOld as LedgerError).status).toBe('TOKEN_HAS_NO_FREEZE_KEY');

      const migrated = await migratePassportCollection({ client, operator: { accountId: op.accountId, privateKey: opKey }, file });
      expect(migrated.passportTokenId).not.toBe(oldTokenId);
      expect({ ...migrated, passportTokenId: oldTokenId }).toEqual(file);
      expect(await passportCollectionProblems(mirror, migrated.passportTokenId)).toEqual([]);
      expect(await passportCollectionProblems(mirror, '0.0.999999')).toEqual(['passport collection 0.0.999999 does not exist on the ledger']);
    } finally {
      client.close();
    }
  });
});
