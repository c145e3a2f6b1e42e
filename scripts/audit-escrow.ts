/**
 * `npm run audit:escrow`: the escrow account's balance equals the sum of the funded, unpaid escrows,
 * to the tinybar, from the ledger alone (the mirror: the escrow account's balance and transactions,
 * the marketplace topic; ledger/escrowAudit.ts). Prints the figures; exits 1 when the audit does not
 * hold (the violations are listed), 2 when it cannot run.
 *
 * Reads the deployment file at LOCALNET_CONFIG_PATH (escrow account, marketplace topic, mirror);
 * ESCROW_ACCOUNT_ID and HEDERA_MIRROR_URL override it. Needs no key. `--json` prints the report as JSON.
 */
import fs from 'node:fs';
import { loadConfig } from '../config/index.js';
import { MirrorClient } from '../ledger/mirror.js';
import { auditEscrow, formatEscrowAudit } from '../ledger/escrowAudit.js';

const config = loadConfig();
const path = config.LOCALNET_CONFIG_PATH;
if (!fs.existsSync(path)) {
  console.error(`deployment file ${path} not found (LOCALNET_CONFIG_PATH)`);
  process.exit(2);
}
const file = JSON.parse(fs.readFileSync(path, 'utf8')) as { escrow?: string | { accountId?: string }; mirrorUrl?: string; topics?: { marketplace?: string } };
const escrowAccountId = config.ESCROW_ACCOUNT_ID ?? (typeof file.escrow === 'string' ? file.escrow : file.escrow?.accountId);
const mirrorUrl = config.HEDERA_MIRROR_URL ?? file.mirrorUrl;
const marketplaceTopicId = file.topics?.marketplace;
if (!escrowAccountId || !mirrorUrl || !marketplaceTopicId) {
  console.error(`${path} lacks the escrow account, the mirror URL or the marketplace topic`);
  process.exit(2);
}
const report = await auditEscrow(new MirrorClient(mirrorUrl), { escrowAccountId, marketplaceTopicId });
if (process.argv.includes('--json')) console.log(JSON.stringify(report, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2));
else console.log(formatEscrowAudit(report));
process.exit(report.ok ? 0 : 1);
