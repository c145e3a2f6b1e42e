// First-start setup: service accounts, the passport NFT collection, the four topics and funded agent
// accounts, created by real signed transactions (built with the SDK) submitted to our own node, so
// they are in the journal like any other transaction and a restart replays them.
import {
  AccountCreateTransaction,
  AccountId,
  Hbar,
  PrivateKey,
  Timestamp,
  TokenCreateTransaction,
  TokenSupplyType,
  TokenType,
  TopicCreateTransaction,
  TransactionId,
  type Transaction,
} from '@hashgraph/sdk';
import { proto, Status, statusName } from './proto.js';
import { GENESIS_ACCOUNT, NODE_ACCOUNT, type TxRecord } from './state.js';
import { ent, type TxId } from './ids.js';
import type { Engine } from './engine.js';

export interface KeyedAccount {
  accountId: string;
  privateKey: string; // DER hex
}

export interface AgentAccount {
  accountId: string;
  did: string;
  keyType: 'ED25519' | 'ECDSA';
  privateKey: string;
  publicKey: string;
  evmAddress: string;
}

/** What bootstrap created; kept in the state file so a restart reuses the same ids and keys. */
export interface BootstrapInfo {
  operator: KeyedAccount;
  treasury: string;
  escrow: string;
  /** the escrow account's own key (DER hex); absent in state files from before it had one (its key was the operator's) */
  escrowKey?: string;
  payTo: string;
  feePayer: KeyedAccount;
  passportTokenId: string;
  topics: { directory: string; audit: string; a2a: string; marketplace: string };
  accounts: AgentAccount[];
}

const AGENT_COUNT = 6;
const AGENT_BALANCE = new Hbar(1000);
const AGENT_AUTO_ASSOCIATIONS = 10;

export async function bootstrap(engine: Engine, genesisKey: PrivateKey): Promise<BootstrapInfo> {
  const operatorId = AccountId.fromString(ent(GENESIS_ACCOUNT));
  const node = AccountId.fromString(ent(NODE_ACCOUNT));
  // Distinct, slightly back-dated valid starts, so no two bootstrap transactions collide.
  let startNs = BigInt(Date.now() - 2000) * 1_000_000n;

  async function run(tx: Transaction, extraSigners: PrivateKey[] = []): Promise<TxRecord> {
    startNs += 1000n;
    const id = TransactionId.withValidStart(
      operatorId,
      new Timestamp(Number(startNs / 1_000_000_000n), Number(startNs % 1_000_000_000n)),
    );
    tx.setNodeAccountIds([node]).setTransactionId(id).freeze();
    await tx.sign(genesisKey);
    for (const k of extraSigners) await tx.sign(k);
    const list = proto.TransactionList.decode(tx.toBytes());
    const raw = proto.Transaction.encode(list.transactionList[0]).finish();
    const code = engine.submit(raw, { ignoreFaults: true });
    if (code !== Status.OK) throw new Error(`bootstrap precheck failed: ${statusName(code)}`);
    const txId: TxId = { payer: GENESIS_ACCOUNT, validStartNs: startNs, nonce: 0, scheduled: false };
    const rec = engine.lookup(txId);
    if (!rec || rec === 'pending') throw new Error('bootstrap transaction did not reach consensus');
    if (rec.status !== Status.SUCCESS) throw new Error(`bootstrap transaction failed: ${statusName(rec.status)}`);
    return rec;
  }

  async function account(key: PrivateKey, balance: Hbar, opts: { alias?: boolean; autoAssoc?: number; memo?: string } = {}) {
    const tx = new AccountCreateTransaction().setKeyWithoutAlias(key.publicKey).setInitialBalance(balance);
    if (opts.alias) tx.setAlias(key.publicKey.toEvmAddress());
    if (opts.autoAssoc) tx.setMaxAutomaticTokenAssociations(opts.autoAssoc);
    if (opts.memo) tx.setAccountMemo(opts.memo);
    const rec = await run(tx, opts.alias ? [key] : []);
    return ent(rec.accountId!);
  }

  const opKey = genesisKey.publicKey;
  // Treasury and payTo are controlled by the operator key: the service signs for them.
  const treasury = await account(genesisKey, new Hbar(1000), { memo: 'passport treasury' });
  // The escrow holds only escrowed task money (issue 19): its own key, and nothing in it at the start,
  // so its balance is the sum of funded, unpaid escrows (npm run audit:escrow).
  const escrowKey = PrivateKey.generateED25519();
  const escrow = await account(escrowKey, new Hbar(0), { memo: 'marketplace escrow' });
  const payTo = await account(genesisKey, new Hbar(10), { memo: 'x402 payTo' });
  const feePayerKey = PrivateKey.generateED25519();
  const feePayer = await account(feePayerKey, new Hbar(1000), { memo: 'x402 facilitator fee payer' });

  const tokenRec = await run(
    new TokenCreateTransaction()
      .setTokenName('Agent Passport')
      .setTokenSymbol('PASSPORT')
      .setTokenType(TokenType.NonFungibleUnique)
      .setSupplyType(TokenSupplyType.Infinite)
      .setDecimals(0)
      .setInitialSupply(0)
      .setTreasuryAccountId(treasury)
      .setAdminKey(opKey)
      .setSupplyKey(opKey)
      .setWipeKey(opKey)
      .setMetadataKey(opKey)
      // passports are non-transferable: the service freezes each holder's relationship after delivery
      .setFreezeKey(opKey)
      .setFreezeDefault(false)
      .setTokenMemo('agent passport'),
  );
  const passportTokenId = ent(tokenRec.tokenId!);

  const topics = { directory: '', audit: '', a2a: '', marketplace: '' };
  for (const name of Object.keys(topics) as (keyof typeof topics)[]) {
    const rec = await run(new TopicCreateTransaction().setTopicMemo(`agent-passport ${name}`).setAdminKey(opKey));
    topics[name] = ent(rec.topicId!);
  }

  const accounts: AgentAccount[] = [];
  for (let i = 0; i < AGENT_COUNT; i++) {
    const ecdsa = i % 2 === 1;
    const key = ecdsa ? PrivateKey.generateECDSA() : PrivateKey.generateED25519();
    const id = await account(key, AGENT_BALANCE, { alias: ecdsa, autoAssoc: AGENT_AUTO_ASSOCIATIONS, memo: `agent ${i + 1}` });
    const num = Number(id.split('.')[2]);
    accounts.push({
      accountId: id,
      did: `did:hedera:local:${id}`,
      keyType: ecdsa ? 'ECDSA' : 'ED25519',
      privateKey: key.toStringDer(),
      publicKey: key.publicKey.toStringDer(),
      evmAddress: ecdsa ? '0x' + key.publicKey.toEvmAddress().replace(/^0x/, '') : '0x' + num.toString(16).padStart(40, '0'),
    });
  }

  return {
    operator: { accountId: ent(GENESIS_ACCOUNT), privateKey: genesisKey.toStringDer() },
    treasury,
    escrow,
    escrowKey: escrowKey.toStringDer(),
    payTo,
    feePayer: { accountId: feePayer, privateKey: feePayerKey.toStringDer() },
    passportTokenId,
    topics,
    accounts,
  };
}
