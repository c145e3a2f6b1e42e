// Accounts: create, update, and transfers of HBAR and NFTs.
import { Status, big } from '../proto.js';
import type { pb as P } from '../proto.js';
import { accountNum, tokenNum } from '../ids.js';
import { isValidKey, type Key } from '../signatures.js';
import { AUTO_RENEW_PERIOD, type Account, type LedgerState } from '../state.js';
import { fail, type ApplyCtx, type Handler } from './types.js';
import { newTokenRel } from './token.js';

function mustAccount(state: LedgerState, n: number, status: number = Status.INVALID_ACCOUNT_ID): Account {
  const a = n >= 0 ? state.accounts.get(n) : undefined;
  if (!a) return fail(status);
  if (a.deleted) return fail(Status.ACCOUNT_DELETED);
  return a;
}

export const cryptoCreate: Handler = {
  name: 'CRYPTOCREATEACCOUNT',
  precheck(b: P.ICryptoCreateTransactionBody) {
    if (!b.key) return Status.KEY_REQUIRED;
    if (!isValidKey(b.key)) return Status.BAD_ENCODING;
    if (big(b.initialBalance) < 0n) return Status.INVALID_INITIAL_BALANCE;
    if (Buffer.byteLength(b.memo ?? '') > 100) return Status.MEMO_TOO_LONG;
    if ((b.maxAutomaticTokenAssociations ?? 0) < -1) return Status.INVALID_MAX_AUTO_ASSOCIATIONS;
    if (b.alias && b.alias.length !== 0 && b.alias.length !== 20) return Status.INVALID_ALIAS_KEY;
    return Status.OK;
  },
  requiredKeys(_s, b: P.ICryptoCreateTransactionBody) {
    // An EVM-address alias proves itself by a signature of the key it derives from.
    return b.alias && b.alias.length === 20 && b.key ? [b.key] : [];
  },
  apply(ctx, b: P.ICryptoCreateTransactionBody) {
    const { state } = ctx;
    const initial = big(b.initialBalance);
    const payer = mustAccount(state, ctx.payer, Status.PAYER_ACCOUNT_NOT_FOUND);
    if (payer.balance < initial) fail(Status.INSUFFICIENT_PAYER_BALANCE);
    const alias = b.alias && b.alias.length === 20 ? new Uint8Array(b.alias) : null;
    if (alias) {
      const hex = Buffer.from(alias).toString('hex');
      for (const a of state.accounts.values())
        if (a.alias && Buffer.from(a.alias).toString('hex') === hex) fail(Status.ALIAS_ALREADY_ASSIGNED);
    }
    const n = state.allocEntity();
    state.accounts.set(n, {
      num: n,
      key: b.key as Key,
      balance: initial,
      memo: b.memo ?? '',
      maxAutoAssociations: b.maxAutomaticTokenAssociations ?? 0,
      usedAutoAssociations: 0,
      alias,
      receiverSigRequired: b.receiverSigRequired ?? false,
      createdNs: ctx.consensusNs,
      expiryNs: ctx.consensusNs + AUTO_RENEW_PERIOD * 1_000_000_000n,
      deleted: false,
      tokens: new Map(),
    });
    payer.balance -= initial;
    ctx.rec.transfers.push({ account: ctx.payer, amount: -initial }, { account: n, amount: initial });
    ctx.rec.accountId = n;
    ctx.rec.entityId = n;
  },
};

export const cryptoUpdate: Handler = {
  name: 'CRYPTOUPDATEACCOUNT',
  precheck(b: P.ICryptoUpdateTransactionBody) {
    if (b.key && !isValidKey(b.key)) return Status.BAD_ENCODING;
    if (b.memo && Buffer.byteLength(b.memo.value ?? '') > 100) return Status.MEMO_TOO_LONG;
    return Status.OK;
  },
  requiredKeys(state, b: P.ICryptoUpdateTransactionBody) {
    const a = mustAccount(state, accountNum(b.accountIDToUpdate));
    return b.key ? [a.key, b.key] : [a.key];
  },
  apply(ctx, b: P.ICryptoUpdateTransactionBody) {
    const a = mustAccount(ctx.state, accountNum(b.accountIDToUpdate));
    const maxAuto = b.maxAutomaticTokenAssociations?.value;
    if (maxAuto !== undefined && maxAuto !== null && maxAuto !== -1 && maxAuto < a.usedAutoAssociations)
      fail(Status.EXISTING_AUTOMATIC_ASSOCIATIONS_EXCEED_GIVEN_LIMIT);
    if (b.key) a.key = b.key as Key;
    if (b.memo) a.memo = b.memo.value ?? '';
    if (maxAuto !== undefined && maxAuto !== null) a.maxAutoAssociations = maxAuto;
    if (b.receiverSigRequiredWrapper) a.receiverSigRequired = b.receiverSigRequiredWrapper.value ?? false;
    ctx.rec.entityId = a.num;
  },
};

function transferRequiredKeys(state: LedgerState, b: P.ICryptoTransferTransactionBody): Key[] {
  const keys: Key[] = [];
  for (const aa of b.transfers?.accountAmounts ?? []) {
    if (aa.isApproval) fail(Status.NOT_SUPPORTED);
    const a = mustAccount(state, accountNum(aa.accountID));
    const amt = big(aa.amount);
    if (amt < 0n || (amt > 0n && a.receiverSigRequired)) keys.push(a.key);
  }
  for (const tl of b.tokenTransfers ?? []) {
    const t = state.tokens.get(tokenNum(tl.token));
    if (!t || t.deleted) fail(Status.INVALID_TOKEN_ID);
    if ((tl.transfers ?? []).length) fail(Status.ACCOUNT_AMOUNT_TRANSFERS_ONLY_ALLOWED_FOR_FUNGIBLE_COMMON);
    for (const nt of tl.nftTransfers ?? []) {
      if (nt.isApproval) fail(Status.NOT_SUPPORTED);
      keys.push(mustAccount(state, accountNum(nt.senderAccountID)).key);
      const r = mustAccount(state, accountNum(nt.receiverAccountID));
      if (r.receiverSigRequired) keys.push(r.key);
    }
  }
  return keys;
}

export const cryptoTransfer: Handler = {
  name: 'CRYPTOTRANSFER',
  precheck(b: P.ICryptoTransferTransactionBody) {
    const aas = b.transfers?.accountAmounts ?? [];
    let sum = 0n;
    const seen = new Set<number>();
    for (const aa of aas) {
      const n = accountNum(aa.accountID);
      if (n < 0) return Status.INVALID_ACCOUNT_ID;
      if (seen.has(n)) return Status.ACCOUNT_REPEATED_IN_ACCOUNT_AMOUNTS;
      seen.add(n);
      sum += big(aa.amount);
    }
    if (sum !== 0n) return Status.INVALID_ACCOUNT_AMOUNTS;
    if (aas.length === 0 && (b.tokenTransfers ?? []).length === 0) return Status.EMPTY_TOKEN_TRANSFER_BODY;
    return Status.OK;
  },
  requiredKeys: (state, b) => transferRequiredKeys(state, b),
  apply(ctx: ApplyCtx, b: P.ICryptoTransferTransactionBody) {
    const { state } = ctx;
    // Validate everything on a simulation first: balances, ownership, associations.
    const aas = (b.transfers?.accountAmounts ?? []).map((aa) => ({ n: accountNum(aa.accountID), amt: big(aa.amount) }));
    let sum = 0n;
    for (const { n, amt } of aas) {
      const a = mustAccount(state, n);
      sum += amt;
      if (amt < 0n && a.balance < -amt) fail(Status.INSUFFICIENT_ACCOUNT_BALANCE);
    }
    if (sum !== 0n) fail(Status.INVALID_ACCOUNT_AMOUNTS);

    const owner = new Map<string, number>();
    const newAssoc = new Map<number, Set<number>>(); // account -> tokens auto-associated here
    const usedSlots = new Map<number, number>();
    const moves: { token: number; serial: bigint; from: number; to: number }[] = [];
    for (const tl of b.tokenTransfers ?? []) {
      const token = tokenNum(tl.token);
      const t = state.tokens.get(token);
      if (!t || t.deleted) fail(Status.INVALID_TOKEN_ID);
      for (const nt of tl.nftTransfers ?? []) {
        const serial = big(nt.serialNumber);
        const from = accountNum(nt.senderAccountID);
        const to = accountNum(nt.receiverAccountID);
        if (from === to) fail(Status.ACCOUNT_REPEATED_IN_ACCOUNT_AMOUNTS);
        const nft = state.nft(token, serial);
        if (!nft || nft.deleted) fail(Status.INVALID_NFT_ID);
        const k = `${token}/${serial}`;
        const cur = owner.get(k) ?? nft!.owner;
        const sender = mustAccount(state, from);
        if (!sender.tokens.has(token)) fail(Status.TOKEN_NOT_ASSOCIATED_TO_ACCOUNT);
        // A frozen relationship neither sends nor receives (Hedera: ACCOUNT_FROZEN_FOR_TOKEN).
        if (sender.tokens.get(token)!.frozen) fail(Status.ACCOUNT_FROZEN_FOR_TOKEN);
        if (cur !== from) fail(Status.SENDER_DOES_NOT_OWN_NFT_SERIAL_NO);
        const recv = mustAccount(state, to);
        if (recv.tokens.get(token)?.frozen) fail(Status.ACCOUNT_FROZEN_FOR_TOKEN);
        if (!recv.tokens.has(token) && !newAssoc.get(to)?.has(token)) {
          const used = usedSlots.get(to) ?? recv.usedAutoAssociations;
          if (recv.maxAutoAssociations === 0) fail(Status.TOKEN_NOT_ASSOCIATED_TO_ACCOUNT);
          if (recv.maxAutoAssociations !== -1 && used >= recv.maxAutoAssociations)
            fail(Status.NO_REMAINING_AUTOMATIC_ASSOCIATIONS);
          // an automatic association would start frozen: Hedera refuses it the same way
          if (t!.freezeKey && t!.freezeDefault) fail(Status.ACCOUNT_FROZEN_FOR_TOKEN);
          usedSlots.set(to, used + 1);
          if (!newAssoc.has(to)) newAssoc.set(to, new Set());
          newAssoc.get(to)!.add(token);
        }
        owner.set(k, to);
        moves.push({ token, serial, from, to });
      }
    }

    // Apply.
    for (const { n, amt } of aas) {
      state.accounts.get(n)!.balance += amt;
      ctx.rec.transfers.push({ account: n, amount: amt });
    }
    for (const [acct, tokens] of newAssoc) {
      const a = state.accounts.get(acct)!;
      for (const token of tokens) {
        a.tokens.set(token, newTokenRel(state.tokens.get(token)!, true, ctx.consensusNs));
        a.usedAutoAssociations++;
        ctx.rec.autoAssociations.push({ token, account: acct });
      }
    }
    for (const m of moves) {
      const nft = state.nft(m.token, m.serial)!;
      nft.owner = m.to;
      nft.modifiedNs = ctx.consensusNs;
      ctx.rec.nftTransfers.push({ token: m.token, serial: m.serial, sender: m.from, receiver: m.to });
    }
  },
};
