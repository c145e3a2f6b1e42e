import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keccak256, parseEther, type Abi, parseEventLogs, toHex, zeroAddress, type Address, type Hex } from 'viem';
import { agentPassportAbi, taskEscrowAbi } from '../../evm/abis.js';
import { deployContracts } from '../../evm/deploy.js';
import { deployFixture, mined, revertOf, startTestChain, type TestChain } from './helpers.js';

let chain: TestChain;
let passport: Address;
let escrow: Address;
let A: Address; // deployer: owner, minter, arbiter
let B: Address;
let C: Address;
let D: Address;

beforeAll(async () => {
  chain = await startTestChain();
  passport = chain.addresses.passport;
  escrow = chain.addresses.escrow;
  [A, B, C, D] = chain.anvil.accounts.map((a) => a.address) as [Address, Address, Address, Address];
}, 60_000);

afterAll(async () => {
  await chain?.anvil.stop();
});

const w = (i: number) => chain.wallets[i]!;
const read = <T>(functionName: string, args: readonly unknown[] = []) =>
  chain.publicClient.readContract({ address: passport, abi: agentPassportAbi, functionName, args } as never) as Promise<T>;
const write = (i: number, functionName: string, args: readonly unknown[] = []) =>
  w(i).writeContract({ address: passport, abi: agentPassportAbi, functionName, args } as never) as Promise<Hex>;
const events = (receipt: { logs: readonly unknown[] }, abi: Abi = agentPassportAbi as Abi) =>
  parseEventLogs({ abi, logs: receipt.logs as never }) as unknown as { eventName: string; args: Record<string, unknown> }[];

async function mintTo(to: Address, tier = 1, caps = ['api_call'], type = 1, uri = 'ipfs://card') {
  const receipt = await mined(chain, write(0, 'mint', [to, type, caps, tier, uri]));
  const minted = events(receipt).find((e) => e.eventName === 'PassportMinted')!;
  return minted.args.tokenId as bigint;
}

describe('evm/deploy', () => {
  it('is idempotent when the recorded addresses hold code', async () => {
    const again = await deployContracts({
      publicClient: chain.publicClient,
      walletClient: w(0),
      existing: { passport, escrow },
    });
    expect(again.deployed).toEqual({ passport: false, escrow: false });
    expect(again.passport).toBe(passport);
    expect(again.escrow).toBe(escrow);
  });
});

describe('AgentPassport', () => {
  let tokenB: bigint;

  it('declares ERC-165, ERC-721 and metadata interfaces', async () => {
    expect(await read('supportsInterface', ['0x01ffc9a7'])).toBe(true);
    expect(await read('supportsInterface', ['0x80ac58cd'])).toBe(true);
    expect(await read('supportsInterface', ['0x5b5e139f'])).toBe(true);
    expect(await read('supportsInterface', ['0xffffffff'])).toBe(false);
    expect(await read('name')).toBe('Agent Passport');
    expect(await read('symbol')).toBe('AGENT');
    expect(await read('owner')).toBe(A);
  });

  it('mints a passport with its card and emits Transfer and PassportMinted', async () => {
    const receipt = await mined(chain, write(0, 'mint', [B, 0, ['api_call', 'payment'], 2, 'ipfs://b']));
    const evs = events(receipt);
    expect(evs.map((e) => e.eventName)).toEqual(['Transfer', 'PassportMinted']);
    const minted = evs[1]!.args;
    tokenB = minted.tokenId as bigint;
    expect(minted).toMatchObject({ owner: B, issuer: A, agentType: 0, tier: 2, metadataUri: 'ipfs://b' });
    expect(minted.capabilities).toEqual(['api_call', 'payment']);
    expect(evs[0]!.args).toMatchObject({ from: zeroAddress, to: B, tokenId: tokenB });

    const block = await chain.publicClient.getBlock({ blockNumber: receipt.blockNumber });
    const [agentType, caps, tier, issuer, issuedAt, revoked, uri] = await read<readonly unknown[]>('getCard', [tokenB]);
    expect({ agentType, caps, tier, issuer, issuedAt, revoked, uri }).toEqual({
      agentType: 0,
      caps: ['api_call', 'payment'],
      tier: 2,
      issuer: A,
      issuedAt: block.timestamp,
      revoked: false,
      uri: 'ipfs://b',
    });
    expect(await read('ownerOf', [tokenB])).toBe(B);
    expect(await read('balanceOf', [B])).toBe(1n);
    expect(await read('tokenOfOwner', [B])).toBe(tokenB);
    expect(await read('tokenOfOwner', [D])).toBe(0n);
    expect(await read('tokenURI', [tokenB])).toBe('ipfs://b');
    expect(await read('isPassport', [tokenB])).toBe(true);
  });

  it('refuses mint by non-minters, to zero, with invalid tiers and a second passport', async () => {
    expect((await revertOf(write(1, 'mint', [C, 0, [], 1, '']))).name).toBe('NotMinter');
    expect((await revertOf(write(0, 'mint', [zeroAddress, 0, [], 1, '']))).name).toBe('ZeroAddress');
    expect((await revertOf(write(0, 'mint', [C, 0, [], 0, '']))).name).toBe('InvalidTier');
    expect((await revertOf(write(0, 'mint', [C, 0, [], 5, '']))).name).toBe('InvalidTier');
    const again = await revertOf(write(0, 'mint', [B, 0, [], 1, '']));
    expect(again).toEqual({ name: 'AlreadyHasPassport', args: [B, tokenB] });
  });

  it('lets the owner authorise minters (MinterSet) and only the owner', async () => {
    expect((await revertOf(write(1, 'setMinter', [C, true]))).name).toBe('NotOwner');
    expect((await revertOf(write(0, 'setMinter', [zeroAddress, true]))).name).toBe('ZeroAddress');
    const r = await mined(chain, write(0, 'setMinter', [C, true]));
    expect(events(r)[0]).toMatchObject({ eventName: 'MinterSet', args: { minter: C, allowed: true } });
    expect(await read('isMinter', [C])).toBe(true);
    const id = await (async () => {
      const receipt = await mined(chain, write(2, 'mint', [C, 2, [], 1, 'ipfs://c']));
      return events(receipt).find((e) => e.eventName === 'PassportMinted')!.args;
    })();
    expect(id).toMatchObject({ owner: C, issuer: C, agentType: 2 });
    await mined(chain, write(0, 'setMinter', [C, false]));
    expect((await revertOf(write(2, 'mint', [D, 0, [], 1, '']))).name).toBe('NotMinter');
  });

  it('upgrades the tier only upwards and only by a minter (TierUpgraded)', async () => {
    const r = await mined(chain, write(0, 'upgradeTier', [tokenB, 3]));
    expect(events(r)[0]).toMatchObject({ eventName: 'TierUpgraded', args: { tokenId: tokenB, oldTier: 2, newTier: 3 } });
    expect((await read<readonly unknown[]>('getCard', [tokenB]))[2]).toBe(3);
    expect(await revertOf(write(0, 'upgradeTier', [tokenB, 3]))).toEqual({ name: 'TierNotHigher', args: [3, 3] });
    expect(await revertOf(write(0, 'upgradeTier', [tokenB, 1]))).toEqual({ name: 'TierNotHigher', args: [3, 1] });
    expect((await revertOf(write(0, 'upgradeTier', [tokenB, 9]))).name).toBe('InvalidTier');
    expect((await revertOf(write(1, 'upgradeTier', [tokenB, 4]))).name).toBe('NotMinter');
    expect((await revertOf(write(0, 'upgradeTier', [999n, 4]))).name).toBe('TokenDoesNotExist');
  });

  it('approves, transfers and safe-transfers with ERC-721 rules', async () => {
    const t = await mintTo(D, 1);
    // approve by a stranger / to the owner
    expect((await revertOf(write(1, 'approve', [C, t]))).name).toBe('NotAuthorized');
    expect((await revertOf(write(3, 'approve', [D, t]))).name).toBe('ApproveToOwner');
    const ra = await mined(chain, write(3, 'approve', [C, t]));
    expect(events(ra)[0]).toMatchObject({ eventName: 'Approval', args: { owner: D, approved: C, tokenId: t } });
    expect(await read('getApproved', [t])).toBe(C);
    // approved account transfers D -> A; approval is cleared
    expect((await revertOf(write(2, 'transferFrom', [B, A, t]))).name).toBe('NotTokenOwner');
    expect((await revertOf(write(2, 'transferFrom', [D, zeroAddress, t]))).name).toBe('ZeroAddress');
    expect((await revertOf(write(1, 'transferFrom', [D, A, t]))).name).toBe('NotAuthorized');
    const rt = await mined(chain, write(2, 'transferFrom', [D, A, t]));
    expect(events(rt)[0]).toMatchObject({ eventName: 'Transfer', args: { from: D, to: A, tokenId: t } });
    expect(await read('ownerOf', [t])).toBe(A);
    expect(await read('getApproved', [t])).toBe(zeroAddress);
    expect(await read('tokenOfOwner', [A])).toBe(t);
    expect(await read('tokenOfOwner', [D])).toBe(0n);
    expect(await read('balanceOf', [D])).toBe(0n);

    // operator approval
    expect((await revertOf(write(0, 'setApprovalForAll', [zeroAddress, true]))).name).toBe('ZeroAddress');
    const ro = await mined(chain, write(0, 'setApprovalForAll', [D, true]));
    expect(events(ro)[0]).toMatchObject({ eventName: 'ApprovalForAll', args: { owner: A, operator: D, approved: true } });
    expect(await read('isApprovedForAll', [A, D])).toBe(true);
    await mined(chain, write(3, 'safeTransferFrom', [A, D, t]));
    expect(await read('ownerOf', [t])).toBe(D);

    // safe transfer to contracts
    const good = await deployFixture(chain, 'GoodReceiver');
    const bad = await deployFixture(chain, 'BadReceiver');
    const noHook = await deployFixture(chain, 'ReentrantWorker', [escrow]);
    expect((await revertOf(write(3, 'safeTransferFrom', [D, bad.address, t]))).name).toBe('UnsafeRecipient');
    expect((await revertOf(write(3, 'safeTransferFrom', [D, noHook.address, t]))).name).toBe('UnsafeRecipient');
    await mined(chain, write(3, 'safeTransferFrom', [D, good.address, t, '0x1234']));
    expect(await read('ownerOf', [t])).toBe(good.address);
  });

  it('reverts reads of missing tokens and the zero owner', async () => {
    expect((await revertOf(read('ownerOf', [12345n]))).name).toBe('TokenDoesNotExist');
    expect((await revertOf(read('getApproved', [12345n]))).name).toBe('TokenDoesNotExist');
    expect((await revertOf(read('getCard', [12345n]))).name).toBe('TokenDoesNotExist');
    expect((await revertOf(read('balanceOf', [zeroAddress]))).name).toBe('ZeroAddress');
  });

  it('revokes once (PassportRevoked), then refuses upgrade, transfer and a second revoke', async () => {
    expect((await revertOf(write(1, 'revoke', [tokenB]))).name).toBe('NotMinter');
    const r = await mined(chain, write(0, 'revoke', [tokenB]));
    expect(events(r)[0]).toMatchObject({ eventName: 'PassportRevoked', args: { tokenId: tokenB, revokedBy: A } });
    expect((await read<readonly unknown[]>('getCard', [tokenB]))[5]).toBe(true);
    expect((await revertOf(write(0, 'revoke', [tokenB]))).name).toBe('PassportIsRevoked');
    expect((await revertOf(write(0, 'upgradeTier', [tokenB, 4]))).name).toBe('PassportIsRevoked');
    expect((await revertOf(write(1, 'transferFrom', [B, C, tokenB]))).name).toBe('PassportIsRevoked');
  });

  it('attests a domain: records the hash, mints an attestation token (DomainAttested)', async () => {
    const hash = keccak256(toHex('snapshot-1'));
    const r = await mined(chain, write(0, 'attestDomain', ['example.com', hash]));
    const evs = events(r);
    expect(evs.map((e) => e.eventName)).toEqual(['Transfer', 'DomainAttested']);
    const id = evs[1]!.args.tokenId as bigint;
    expect(evs[1]!.args).toMatchObject({ snapshotHash: hash, attester: A, domain: 'example.com' });
    expect(await read('ownerOf', [id])).toBe(A);
    expect(await read('latestAttestation', ['example.com'])).toBe(id);
    expect(await read('latestAttestation', ['other.org'])).toBe(0n);
    const [domain, h, attester] = await read<readonly unknown[]>('getAttestation', [id]);
    expect([domain, h, attester]).toEqual(['example.com', hash, A]);
    expect(await read('isPassport', [id])).toBe(false);
    expect((await revertOf(read('getCard', [id]))).name).toBe('NotAPassport');
    expect((await revertOf(read('getAttestation', [1n]))).name).toBe('TokenDoesNotExist');
    expect((await revertOf(write(0, 'attestDomain', ['', hash]))).name).toBe('EmptyDomain');
    expect((await revertOf(write(0, 'attestDomain', ['example.com', `0x${'0'.repeat(64)}`]))).name).toBe('ZeroHash');
    expect((await revertOf(write(1, 'attestDomain', ['example.com', hash]))).name).toBe('NotMinter');
  });

  it('transfers ownership of the contract', async () => {
    expect((await revertOf(write(1, 'transferOwnership', [B]))).name).toBe('NotOwner');
    expect((await revertOf(write(0, 'transferOwnership', [zeroAddress]))).name).toBe('ZeroAddress');
    const r = await mined(chain, write(0, 'transferOwnership', [B]));
    expect(events(r)[0]).toMatchObject({ eventName: 'OwnershipTransferred', args: { previousOwner: A, newOwner: B } });
    await mined(chain, write(1, 'transferOwnership', [A]));
    expect(await read('owner')).toBe(A);
  });
});

describe('TaskEscrow', () => {
  const id = (s: string) => keccak256(toHex(s));
  const ew = (i: number, functionName: string, args: readonly unknown[] = [], value?: bigint) =>
    w(i).writeContract({ address: escrow, abi: taskEscrowAbi, functionName, args, value } as never) as Promise<Hex>;
  const er = <T>(functionName: string, args: readonly unknown[] = []) =>
    chain.publicClient.readContract({ address: escrow, abi: taskEscrowAbi, functionName, args } as never) as Promise<T>;
  const balance = (address: Address) => chain.publicClient.getBalance({ address });

  it('has the deployer as arbiter', async () => {
    expect(await er('arbiter')).toBe(A);
  });

  it('funds and tops up a task (TaskFunded) and refuses zero, foreign top-ups and settled tasks', async () => {
    const r = await mined(chain, ew(1, 'fund', [id('t1')], parseEther('1')));
    expect(events(r, taskEscrowAbi as Abi)[0]).toMatchObject({
      eventName: 'TaskFunded',
      args: { taskId: id('t1'), poster: B, amount: parseEther('1'), total: parseEther('1') },
    });
    const r2 = await mined(chain, ew(1, 'fund', [id('t1')], parseEther('0.5')));
    expect(events(r2, taskEscrowAbi as Abi)[0]!.args).toMatchObject({ amount: parseEther('0.5'), total: parseEther('1.5') });
    expect(await er('getEscrow', [id('t1')])).toEqual([B, 1, parseEther('1.5')]);
    expect(await balance(escrow)).toBe(parseEther('1.5'));
    expect((await revertOf(ew(1, 'fund', [id('t2')], 0n))).name).toBe('ZeroAmount');
    expect((await revertOf(ew(2, 'fund', [id('t1')], 1n))).name).toBe('NotPoster');
  });

  it('releases to the worker by the poster (TaskReleased), once', async () => {
    expect((await revertOf(ew(2, 'release', [id('t1'), D]))).name).toBe('NotAuthorized');
    expect((await revertOf(ew(1, 'release', [id('t1'), zeroAddress]))).name).toBe('ZeroAddress');
    expect((await revertOf(ew(1, 'release', [id('nope'), D]))).name).toBe('NotFunded');
    const before = await balance(D);
    const r = await mined(chain, ew(1, 'release', [id('t1'), D]));
    expect(events(r, taskEscrowAbi as Abi)[0]).toMatchObject({
      eventName: 'TaskReleased',
      args: { taskId: id('t1'), worker: D, amount: parseEther('1.5') },
    });
    expect((await balance(D)) - before).toBe(parseEther('1.5'));
    expect(await er('getEscrow', [id('t1')])).toEqual([B, 2, 0n]);
    expect((await revertOf(ew(1, 'release', [id('t1'), D]))).name).toBe('NotFunded');
    expect((await revertOf(ew(1, 'refund', [id('t1')]))).name).toBe('NotFunded');
    expect((await revertOf(ew(1, 'fund', [id('t1')], 1n))).name).toBe('NotFunded');
  });

  it('releases by the arbiter, refunds by poster or arbiter (TaskRefunded)', async () => {
    await mined(chain, ew(1, 'fund', [id('t3')], 1000n));
    await mined(chain, ew(0, 'release', [id('t3'), C]));
    expect((await er<readonly unknown[]>('getEscrow', [id('t3')]))[1]).toBe(2);

    await mined(chain, ew(1, 'fund', [id('t4')], 2000n));
    expect((await revertOf(ew(2, 'refund', [id('t4')]))).name).toBe('NotAuthorized');
    const r = await mined(chain, ew(0, 'refund', [id('t4')]));
    expect(events(r, taskEscrowAbi as Abi)[0]).toMatchObject({
      eventName: 'TaskRefunded',
      args: { taskId: id('t4'), poster: B, amount: 2000n },
    });
    await mined(chain, ew(2, 'fund', [id('t5')], 3000n));
    const before = await balance(escrow);
    await mined(chain, ew(2, 'refund', [id('t5')]));
    expect(before - (await balance(escrow))).toBe(3000n);
    expect(await er('getEscrow', [id('t5')])).toEqual([C, 3, 0n]);
    expect((await revertOf(ew(2, 'refund', [id('t5')]))).name).toBe('NotFunded');
  });

  it('blocks re-entrance and reverts when the payee refuses payment', async () => {
    const attacker = await deployFixture(chain, 'ReentrantWorker', [escrow]);
    const aw = (functionName: string, args: readonly unknown[] = [], value?: bigint) =>
      w(0).writeContract({
        address: attacker.address,
        abi: [...attacker.abi, ...taskEscrowAbi.filter((x) => x.type === 'error')],
        functionName,
        args,
        value,
      } as never) as Promise<Hex>;
    // the attacker funds task "victim" as poster; A's task "own" is released to the attacker, whose
    // receive() tries to refund "victim" during the payout
    await mined(chain, aw('fundTask', [id('victim')], 500n));
    await mined(chain, aw('setTarget', [id('victim')]));
    await mined(chain, ew(0, 'fund', [id('own')], 700n));
    await mined(chain, ew(0, 'release', [id('own'), attacker.address]));
    const lastError = (await chain.publicClient.readContract({
      address: attacker.address,
      abi: attacker.abi,
      functionName: 'lastError',
    })) as Hex;
    expect(lastError).toBe(keccak256(toHex('Reentrancy()')).slice(0, 10));
    expect(await er('getEscrow', [id('victim')])).toEqual([attacker.address, 1, 500n]);

    await mined(chain, aw('setRejectPayments', [true]));
    expect((await revertOf(aw('refundTask', [id('victim')]))).name).toBe('TransferFailed');
    await mined(chain, ew(0, 'fund', [id('own2')], 1n));
    expect((await revertOf(ew(0, 'release', [id('own2'), attacker.address]))).name).toBe('TransferFailed');
    expect(await er('getEscrow', [id('own2')])).toEqual([A, 1, 1n]);
  });
});
