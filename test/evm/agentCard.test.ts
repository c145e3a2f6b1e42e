/** GET /api/agent/{did}/card against AgentPassport on a fresh anvil, through the real app factory. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { buildApp } from '../../api/app.js';
import { loadConfig } from '../../config/index.js';
import { agentPassportAbi } from '../../evm/abis.js';
import { mined, startTestChain, type TestChain } from './helpers.js';

const CHAIN_ID = 31337;
let chain: TestChain;
let app: FastifyInstance;
const owners: Record<'minted' | 'upgraded' | 'revoked' | 'none', Address> = {} as never;
const issuedAt: Record<string, bigint> = {};

const did = (address: string, chainId = CHAIN_ID) => `did:pkh:eip155:${chainId}:${address}`;

async function mint(to: Address, agentType: number, caps: string[], tier: number, uri: string) {
  const r = await mined(
    chain,
    chain.wallets[0]!.writeContract({ address: chain.addresses.passport, abi: agentPassportAbi, functionName: 'mint', args: [to, agentType, caps, tier, uri] }),
  );
  issuedAt[to] = (await chain.publicClient.getBlock({ blockNumber: r.blockNumber })).timestamp;
  const tokenId = await chain.publicClient.readContract({ address: chain.addresses.passport, abi: agentPassportAbi, functionName: 'tokenOfOwner', args: [to] });
  return tokenId;
}

beforeAll(async () => {
  chain = await startTestChain({ chainId: CHAIN_ID });
  for (const k of ['minted', 'upgraded', 'revoked', 'none'] as const) owners[k] = privateKeyToAccount(generatePrivateKey()).address;
  await mint(owners.minted, 0, ['api_call', 'data_consume'], 1, 'ipfs://minted');
  const up = await mint(owners.upgraded, 1, ['api_call', 'payment'], 2, 'https://example.com/agent.json');
  await mined(chain, chain.wallets[0]!.writeContract({ address: chain.addresses.passport, abi: agentPassportAbi, functionName: 'upgradeTier', args: [up, 4] }));
  const rv = await mint(owners.revoked, 2, [], 3, '');
  await mined(chain, chain.wallets[0]!.writeContract({ address: chain.addresses.passport, abi: agentPassportAbi, functionName: 'revoke', args: [rv] }));

  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: '100000',
    EVM_RPC_URL: chain.anvil.rpcUrl,
    EVM_CHAIN_ID: String(CHAIN_ID),
    PASSPORT_CONTRACT_ADDRESS: chain.addresses.passport,
    ESCROW_CONTRACT_ADDRESS: chain.addresses.escrow,
  });
  app = await buildApp({ config }, { logger: false });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await chain?.anvil.stop();
});

const getCard = async (d: string) => {
  const res = await app.inject({ method: 'GET', url: `/api/agent/${encodeURIComponent(d)}/card` });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
};

describe('GET /api/agent/{did}/card', () => {
  it('returns the card of a minted passport', async () => {
    const d = did(owners.minted);
    const res = await getCard(d);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: d,
      type: 'CREATOR',
      capabilities: ['api_call', 'data_consume'],
      tier: 1,
      issuer: chain.anvil.accounts[0]!.address,
      issuedAt: new Date(Number(issuedAt[owners.minted]) * 1000).toISOString(),
      revoked: false,
      metadataUri: 'ipfs://minted',
    });
  });

  it('shows the upgraded tier', async () => {
    const res = await getCard(did(owners.upgraded));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ type: 'EXECUTOR', tier: 4, revoked: false, capabilities: ['api_call', 'payment'], metadataUri: 'https://example.com/agent.json' });
  });

  it('shows a revoked passport as revoked', async () => {
    const res = await getCard(did(owners.revoked.toLowerCase()));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ type: 'UNKNOWN', tier: 3, revoked: true, capabilities: [], metadataUri: '' });
  });

  it('answers 404 agent_not_found for unknown, non-EVM and wrong-chain DIDs', async () => {
    for (const d of [
      did(owners.none),
      did(owners.minted, 1),
      'did:hedera:local:0.0.1001',
      'did:pkh:eip155:31337:0x1234',
      'did:pkh:solana:4sGjMW1sUnHzSxGspuhpqLDx6wiyjNtZ:abc',
      'not-a-did',
    ]) {
      const res = await getCard(d);
      expect(res.status, d).toBe(404);
      expect(res.body.code, d).toBe('agent_not_found');
      expect(typeof res.body.error).toBe('string');
    }
  });
});
