/**
 * `npm run bootstrap:network`: creates the passport collection, the four topics and the treasury and
 * payTo accounts (their own accounts, with the operator's key, issue 26 item 9) on HEDERA_NETWORK
 * (testnet, mainnet, previewnet) with HEDERA_OPERATOR_ID / HEDERA_OPERATOR_KEY, and writes the
 * deployment file at LOCALNET_CONFIG_PATH (refusing to overwrite one). The operator key is NOT written
 * to the file: the worker takes it from HEDERA_OPERATOR_KEY (the API holds no key). The marketplace
 * escrow gets an account of its own, whose key is written to <file>.escrow-key (0600) for the
 * operator to move into ESCROW_PRIVATE_KEY.
 * LEDGER_NODE=host:port@0.0.3 targets a single node (e.g. a localnet) instead of the public network.
 * On an existing file it checks the passport collection (e.g. no freeze key: made before passports
 * became non-transferable) and names the migration: `npm run bootstrap:network -- --new-collection`
 * creates a new collection and rewrites only passportTokenId (the old file is kept as .bak).
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config/index.js';
import { createLedgerClient } from '../ledger/client.js';
import { parsePrivateKey, PrivateKey } from '@agent-passport/core/keys';
import { bootstrapNetwork, migratePassportCollection, passportCollectionProblems, type DeploymentFile } from '../ledger/bootstrapNetwork.js';
import { MirrorClient } from '../ledger/mirror.js';

const config = loadConfig();
const problems = [
  !config.HEDERA_OPERATOR_ID && 'HEDERA_OPERATOR_ID: missing',
  !config.HEDERA_OPERATOR_KEY && 'HEDERA_OPERATOR_KEY: missing',
  !config.HEDERA_MIRROR_URL && 'HEDERA_MIRROR_URL: missing (e.g. https://testnet.mirrornode.hedera.com/api/v1)',
].filter(Boolean);
if (problems.length) {
  console.error(`Cannot bootstrap:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(2);
}
const out = config.LOCALNET_CONFIG_PATH;
const newCollection = process.argv.includes('--new-collection');
const existing: DeploymentFile | null = fs.existsSync(out) ? JSON.parse(fs.readFileSync(out, 'utf8')) : null;
if (existing && !newCollection) {
  const problems = await passportCollectionProblems(new MirrorClient(config.HEDERA_MIRROR_URL!), existing.passportTokenId).catch((e: Error) => [`cannot check ${existing.passportTokenId}: ${e.message}`]);
  for (const p of problems) console.error(`${out}: ${p}`);
  if (problems.length) console.error(`Migrate: npm run bootstrap:network -- --new-collection (a new collection with a freeze key; only passportTokenId changes in ${out}; old passports stay readable)`);
  console.error(`${out} exists; set LOCALNET_CONFIG_PATH to a new file (e.g. .data/${config.HEDERA_NETWORK}.json)`);
  process.exit(2);
}
if (newCollection && !existing) {
  console.error(`--new-collection migrates an existing deployment, and ${out} does not exist`);
  process.exit(2);
}
const nodeSpec = process.env.LEDGER_NODE ? /^(.+)@(\d+\.\d+\.\d+)$/.exec(process.env.LEDGER_NODE) : null;
const operatorKey = parsePrivateKey(config.HEDERA_OPERATOR_KEY!);
// The escrow account's key (issue 19): generated here and written, before the account exists, to a
// file of its own (mode 0600) beside the deployment, never into the deployment itself; the operator
// moves it into ESCROW_PRIVATE_KEY (a secret store) and deletes the file.
const escrowKeyPath = `${out}.escrow-key`;
let escrowKey: PrivateKey | undefined;
if (!existing) {
  if (fs.existsSync(escrowKeyPath)) escrowKey = parsePrivateKey(fs.readFileSync(escrowKeyPath, 'utf8').trim());
  else {
    escrowKey = PrivateKey.generateED25519();
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(escrowKeyPath, escrowKey.toStringDer() + '\n', { mode: 0o600 });
  }
}
const node = nodeSpec ? { address: nodeSpec[1], accountId: nodeSpec[2] } : undefined;
const client = createLedgerClient({
  network: config.HEDERA_NETWORK,
  node,
  operator: { accountId: config.HEDERA_OPERATOR_ID!, privateKey: config.HEDERA_OPERATOR_KEY! },
});
try {
  const operator = { accountId: config.HEDERA_OPERATOR_ID!, privateKey: operatorKey };
  if (existing) fs.copyFileSync(out, `${out}.bak`);
  const deployment = existing ? await migratePassportCollection({ client, operator, file: existing }) : await bootstrapNetwork({
    client,
    network: config.HEDERA_NETWORK,
    operator,
    node,
    mirrorUrl: config.HEDERA_MIRROR_URL!,
    facilitatorUrl: config.FACILITATOR_URL,
    escrowKey,
  });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(deployment, null, 2));
  console.log(`wrote ${out}: token ${deployment.passportTokenId}, topics ${JSON.stringify(deployment.topics)}, treasury ${deployment.treasury}, payTo ${deployment.payTo}`);
  if (escrowKey) {
    console.log(`escrow account ${deployment.escrow}: its key is in ${escrowKeyPath}; put it in ESCROW_PRIVATE_KEY (a secret store) for the worker and delete the file`);
  }
} finally {
  client.close();
}
