// HTS, non-fungible tokens only: create, associate, dissociate, mint, burn, wipe, update NFT metadata,
// freeze and unfreeze an account's relationship.
import { Status, big, type StatusCode } from '../proto.js';
import type { pb as P } from '../proto.js';
import { accountNum, tokenNum, tsToNs } from '../ids.js';
import { isValidKey, type Key } from '../signatures.js';
import { AUTO_RENEW_PERIOD, type Account, type LedgerState, type Nft, type Token, type TokenRel } from '../state.js';
import { fail, type Handler } from './types.js';

const MAX_METADATA = 100;
const MAX_BATCH = 10;
const NON_FUNGIBLE_UNIQUE = 1;
const FINITE = 1;

function account(state: LedgerState, n: number): Account {
  const a = n >= 0 ? state.accounts.get(n) : undefined;
  if (!a) return fail(Status.INVALID_ACCOUNT_ID);
  if (a.deleted) return fail(Status.ACCOUNT_DELETED);
  return a;
}

function token(state: LedgerState, id: P.ITokenID | null | undefined): Token {
  const t = state.tokens.get(tokenNum(id));
  if (!t) return fail(Status.INVALID_TOKEN_ID);
  if (t.deleted) return fail(Status.TOKEN_WAS_DELETED);
  return t;
}

const keyOrNull = (k: P.IKey | null | undefined): Key | null => (k ? (k as Key) : null);

/**
 * A new account-token relationship, as Hedera makes it: frozen when the token has a freeze key and
 * freezeDefault (the treasury's own relationship never starts frozen).
 */
export function newTokenRel(t: Token, automatic: boolean, ns: bigint, treasury = false): TokenRel {
  return { automatic, createdNs: ns, frozen: !treasury && t.freezeKey !== null && t.freezeDefault };
}

export const tokenCreate: Handler = {
  name: 'TOKENCREATION',
  precheck(b: P.ITokenCreateTransactionBody) {
    if ((b.tokenType ?? 0) !== NON_FUNGIBLE_UNIQUE) return Status.NOT_SUPPORTED; // fungible tokens: not here
    if (!b.name) return Status.MISSING_TOKEN_NAME;
    if (!b.symbol) return Status.MISSING_TOKEN_SYMBOL;
    if (Buffer.byteLength(b.name) > 100) return Status.TOKEN_NAME_TOO_LONG;
    if (Buffer.byteLength(b.symbol) > 100) return Status.TOKEN_SYMBOL_TOO_LONG;
    if (Buffer.byteLength(b.memo ?? '') > 100) return Status.MEMO_TOO_LONG;
    if (big(b.initialSupply) !== 0n) return Status.INVALID_TOKEN_INITIAL_SUPPLY;
    if ((b.decimals ?? 0) !== 0) return Status.INVALID_TOKEN_DECIMALS;
    if (!b.supplyKey) return Status.TOKEN_HAS_NO_SUPPLY_KEY;
    if (b.freezeDefault && !b.freezeKey) return Status.TOKEN_HAS_NO_FREEZE_KEY;
    const checks: [P.IKey | null | undefined, number][] = [
      [b.adminKey, Status.INVALID_ADMIN_KEY],
      [b.supplyKey, Status.INVALID_SUPPLY_KEY],
      [b.wipeKey, Status.INVALID_WIPE_KEY],
      [b.metadataKey, Status.INVALID_METADATA_KEY],
      [b.kycKey, Status.INVALID_KYC_KEY],
      [b.freezeKey, Status.INVALID_FREEZE_KEY],
      [b.pauseKey, Status.INVALID_PAUSE_KEY],
    ];
    for (const [k, s] of checks) if (k && !isValidKey(k)) return s;
    if ((b.supplyType ?? 0) === FINITE && big(b.maxSupply) <= 0n) return Status.INVALID_TOKEN_MAX_SUPPLY;
    if ((b.customFees ?? []).length) return Status.NOT_SUPPORTED;
    return Status.OK;
  },
  requiredKeys(state, b: P.ITokenCreateTransactionBody) {
    const treasury = state.accounts.get(accountNum(b.treasury));
    if (!treasury || treasury.deleted) fail(Status.INVALID_TREASURY_ACCOUNT_FOR_TOKEN);
    const keys: Key[] = [treasury!.key];
    if (b.adminKey) keys.push(b.adminKey as Key);
    if (b.autoRenewAccount) keys.push(account(state, accountNum(b.autoRenewAccount)).key);
    return keys;
  },
  apply(ctx, b: P.ITokenCreateTransactionBody) {
    const { state } = ctx;
    const treasuryNum = accountNum(b.treasury);
    const treasury = state.accounts.get(treasuryNum);
    if (!treasury || treasury.deleted) return fail(Status.INVALID_TREASURY_ACCOUNT_FOR_TOKEN);
    const n = state.allocEntity();
    const period = big(b.autoRenewPeriod?.seconds) || AUTO_RENEW_PERIOD;
    state.tokens.set(n, {
      num: n,
      name: b.name ?? '',
      symbol: b.symbol ?? '',
      memo: b.memo ?? '',
      type: 'NON_FUNGIBLE_UNIQUE',
      supplyType: (b.supplyType ?? 0) === FINITE ? 'FINITE' : 'INFINITE',
      maxSupply: big(b.maxSupply),
      totalSupply: 0n,
      nextSerial: 1n,
      treasury: treasuryNum,
      adminKey: keyOrNull(b.adminKey),
      supplyKey: keyOrNull(b.supplyKey),
      wipeKey: keyOrNull(b.wipeKey),
      metadataKey: keyOrNull(b.metadataKey),
      kycKey: keyOrNull(b.kycKey),
      freezeKey: keyOrNull(b.freezeKey),
      freezeDefault: !!b.freezeKey && !!b.freezeDefault,
      pauseKey: keyOrNull(b.pauseKey),
      feeScheduleKey: keyOrNull(b.feeScheduleKey),
      metadata: new Uint8Array(b.metadata ?? []),
      autoRenewAccount: b.autoRenewAccount ? accountNum(b.autoRenewAccount) : null,
      createdNs: ctx.consensusNs,
      modifiedNs: ctx.consensusNs,
      expiryNs: b.expiry ? tsToNs(b.expiry) : ctx.consensusNs + period * 1_000_000_000n,
      deleted: false,
    });
    treasury.tokens.set(n, newTokenRel(state.tokens.get(n)!, false, ctx.consensusNs, true));
    ctx.rec.autoAssociations.push({ token: n, account: treasuryNum });
    ctx.rec.tokenId = n;
    ctx.rec.entityId = n;
  },
};

export const tokenAssociate: Handler = {
  name: 'TOKENASSOCIATE',
  precheck(b: P.ITokenAssociateTransactionBody) {
    if (accountNum(b.account) < 0) return Status.INVALID_ACCOUNT_ID;
    const ids = (b.tokens ?? []).map(tokenNum);
    if (new Set(ids).size !== ids.length) return Status.TOKEN_ID_REPEATED_IN_TOKEN_LIST;
    return Status.OK;
  },
  requiredKeys: (state, b: P.ITokenAssociateTransactionBody) => [account(state, accountNum(b.account)).key],
  apply(ctx, b: P.ITokenAssociateTransactionBody) {
    const a = account(ctx.state, accountNum(b.account));
    const ts = (b.tokens ?? []).map((id) => token(ctx.state, id));
    for (const t of ts) if (a.tokens.has(t.num)) fail(Status.TOKEN_ALREADY_ASSOCIATED_TO_ACCOUNT);
    for (const t of ts) a.tokens.set(t.num, newTokenRel(t, false, ctx.consensusNs));
    ctx.rec.entityId = a.num;
  },
};

export const tokenDissociate: Handler = {
  name: 'TOKENDISSOCIATE',
  requiredKeys: (state, b: P.ITokenDissociateTransactionBody) => [account(state, accountNum(b.account)).key],
  apply(ctx, b: P.ITokenDissociateTransactionBody) {
    const a = account(ctx.state, accountNum(b.account));
    const ts = (b.tokens ?? []).map((id) => token(ctx.state, id));
    for (const t of ts) {
      if (!a.tokens.has(t.num)) fail(Status.TOKEN_NOT_ASSOCIATED_TO_ACCOUNT);
      if (t.treasury === a.num) fail(Status.ACCOUNT_IS_TREASURY);
      for (const nft of ctx.state.nfts.values())
        if (nft.token === t.num && !nft.deleted && nft.owner === a.num) fail(Status.ACCOUNT_STILL_OWNS_NFTS);
    }
    for (const t of ts) {
      if (a.tokens.get(t.num)!.automatic) a.usedAutoAssociations--;
      a.tokens.delete(t.num);
    }
    ctx.rec.entityId = a.num;
  },
};

export const tokenMint: Handler = {
  name: 'TOKENMINT',
  precheck(b: P.ITokenMintTransactionBody) {
    if (tokenNum(b.token) < 0) return Status.INVALID_TOKEN_ID;
    if (big(b.amount) !== 0n && (b.metadata ?? []).length) return Status.INVALID_TRANSACTION_BODY;
    return Status.OK;
  },
  requiredKeys(state, b: P.ITokenMintTransactionBody) {
    const t = token(state, b.token);
    if (!t.supplyKey) fail(Status.TOKEN_HAS_NO_SUPPLY_KEY);
    return [t.supplyKey!];
  },
  apply(ctx, b: P.ITokenMintTransactionBody) {
    const t = token(ctx.state, b.token);
    const metas = b.metadata ?? [];
    if (big(b.amount) !== 0n || metas.length === 0) fail(Status.INVALID_TOKEN_MINT_METADATA);
    if (metas.length > MAX_BATCH) fail(Status.BATCH_SIZE_LIMIT_EXCEEDED);
    for (const m of metas) if (m.length > MAX_METADATA) fail(Status.METADATA_TOO_LONG);
    if (t.supplyType === 'FINITE' && t.totalSupply + BigInt(metas.length) > t.maxSupply)
      fail(Status.TOKEN_MAX_SUPPLY_REACHED);
    const serials: bigint[] = [];
    for (const m of metas) {
      const serial = t.nextSerial++;
      const nft: Nft = {
        token: t.num,
        serial,
        owner: t.treasury,
        metadata: new Uint8Array(m),
        createdNs: ctx.consensusNs,
        modifiedNs: ctx.consensusNs,
        deleted: false,
      };
      ctx.state.nfts.set(`${t.num}/${serial}`, nft);
      serials.push(serial);
      ctx.rec.nftTransfers.push({ token: t.num, serial, sender: null, receiver: t.treasury });
    }
    t.totalSupply += BigInt(metas.length);
    t.modifiedNs = ctx.consensusNs;
    ctx.rec.serials = serials;
    ctx.rec.newTotalSupply = t.totalSupply;
    ctx.rec.entityId = t.num;
  },
};

export const tokenBurn: Handler = {
  name: 'TOKENBURN',
  requiredKeys(state, b: P.ITokenBurnTransactionBody) {
    const t = token(state, b.token);
    if (!t.supplyKey) fail(Status.TOKEN_HAS_NO_SUPPLY_KEY);
    return [t.supplyKey!];
  },
  apply(ctx, b: P.ITokenBurnTransactionBody) {
    const t = token(ctx.state, b.token);
    const serials = (b.serialNumbers ?? []).map(big);
    if (serials.length === 0 || big(b.amount) !== 0n) fail(Status.INVALID_TOKEN_BURN_METADATA);
    removeNfts(ctx, t, t.treasury, serials, Status.TREASURY_MUST_OWN_BURNED_NFT);
  },
};

/**
 * Burn and wipe: the serials (all owned by `holder`, at most MAX_BATCH) leave circulation; the
 * record shows each as a transfer from the holder to nobody.
 */
function removeNfts(ctx: Parameters<Handler['apply']>[0], t: ReturnType<typeof token>, holder: number, serials: bigint[], notOwned: StatusCode): void {
  if (serials.length > MAX_BATCH) fail(Status.BATCH_SIZE_LIMIT_EXCEEDED);
  const nfts = serials.map((s) => {
    const nft = ctx.state.nft(t.num, s);
    if (!nft || nft.deleted) return fail(Status.INVALID_NFT_ID);
    if (nft.owner !== holder) return fail(notOwned);
    return nft;
  });
  for (const nft of nfts) {
    nft.deleted = true;
    nft.modifiedNs = ctx.consensusNs;
    ctx.rec.nftTransfers.push({ token: t.num, serial: nft.serial, sender: holder, receiver: null });
  }
  t.totalSupply -= BigInt(nfts.length);
  t.modifiedNs = ctx.consensusNs;
  ctx.rec.newTotalSupply = t.totalSupply;
  ctx.rec.entityId = t.num;
}

export const tokenWipe: Handler = {
  name: 'TOKENWIPE',
  requiredKeys(state, b: P.ITokenWipeAccountTransactionBody) {
    const t = token(state, b.token);
    if (!t.wipeKey) fail(Status.TOKEN_HAS_NO_WIPE_KEY);
    account(state, accountNum(b.account));
    return [t.wipeKey!];
  },
  apply(ctx, b: P.ITokenWipeAccountTransactionBody) {
    const t = token(ctx.state, b.token);
    const a = account(ctx.state, accountNum(b.account));
    if (a.num === t.treasury) fail(Status.CANNOT_WIPE_TOKEN_TREASURY_ACCOUNT);
    if (!a.tokens.has(t.num)) fail(Status.TOKEN_NOT_ASSOCIATED_TO_ACCOUNT);
    // As hedera-services' TokenAccountWipeHandler (TokenHandlerHelper.getIfUsable on the relation):
    // a frozen relationship cannot be wiped; unfreeze it first.
    if (a.tokens.get(t.num)!.frozen) fail(Status.ACCOUNT_FROZEN_FOR_TOKEN);
    const serials = (b.serialNumbers ?? []).map(big);
    if (serials.length === 0 || big(b.amount) !== 0n) fail(Status.INVALID_WIPING_AMOUNT);
    removeNfts(ctx, t, a.num, serials, Status.ACCOUNT_DOES_NOT_OWN_WIPED_NFT);
  },
};

export const tokenUpdateNfts: Handler = {
  name: 'TOKENUPDATENFTS',
  requiredKeys(state, b: P.ITokenUpdateNftsTransactionBody) {
    const t = token(state, b.token);
    if (!t.metadataKey) fail(Status.TOKEN_HAS_NO_METADATA_KEY);
    return [t.metadataKey!];
  },
  apply(ctx, b: P.ITokenUpdateNftsTransactionBody) {
    const t = token(ctx.state, b.token);
    const serials = (b.serialNumbers ?? []).map(big);
    if (serials.length === 0) fail(Status.MISSING_SERIAL_NUMBERS);
    if (serials.length > MAX_BATCH) fail(Status.BATCH_SIZE_LIMIT_EXCEEDED);
    const meta = b.metadata ? new Uint8Array(b.metadata.value ?? []) : null;
    if (meta && meta.length > MAX_METADATA) fail(Status.METADATA_TOO_LONG);
    const nfts = serials.map((s) => {
      const nft = ctx.state.nft(t.num, s);
      if (!nft || nft.deleted) return fail(Status.INVALID_NFT_ID);
      return nft;
    });
    if (meta)
      for (const nft of nfts) {
        nft.metadata = meta;
        nft.modifiedNs = ctx.consensusNs;
      }
    ctx.rec.entityId = t.num;
  },
};

type FreezeBody = P.ITokenFreezeAccountTransactionBody | P.ITokenUnfreezeAccountTransactionBody;

/**
 * TokenFreezeAccount / TokenUnfreezeAccount: signed by the token's freeze key; the account must be
 * associated. Idempotent as on Hedera: freezing a frozen relationship (or unfreezing an unfrozen
 * one) is SUCCESS.
 */
function freezeHandler(name: string, frozen: boolean): Handler {
  return {
    name,
    precheck(b: FreezeBody) {
      if (tokenNum(b.token) < 0) return Status.INVALID_TOKEN_ID;
      if (accountNum(b.account) < 0) return Status.INVALID_ACCOUNT_ID;
      return Status.OK;
    },
    requiredKeys(state, b: FreezeBody) {
      const t = state.tokens.get(tokenNum(b.token));
      if (!t) return fail(Status.INVALID_TOKEN_ID);
      if (!t.freezeKey) return fail(Status.TOKEN_HAS_NO_FREEZE_KEY);
      return [t.freezeKey];
    },
    apply(ctx, b: FreezeBody) {
      const a = account(ctx.state, accountNum(b.account));
      const t = token(ctx.state, b.token);
      if (!t.freezeKey) fail(Status.TOKEN_HAS_NO_FREEZE_KEY);
      const rel = a.tokens.get(t.num);
      if (!rel) return fail(Status.TOKEN_NOT_ASSOCIATED_TO_ACCOUNT);
      rel.frozen = frozen;
      ctx.rec.entityId = a.num;
    },
  };
}

export const tokenFreeze = freezeHandler('TOKENFREEZE', true);
export const tokenUnfreeze = freezeHandler('TOKENUNFREEZE', false);
