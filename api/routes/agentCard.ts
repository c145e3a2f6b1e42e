/**
 * GET /api/agent/{did}/card: the agent card of an EVM-backed DID (did:pkh:eip155:{chainId}:{address}),
 * read from the AgentPassport contract (the passport token owned by that address).
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { BaseError, ContractFunctionRevertedError, getAddress, type Address } from 'viem';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorResponses } from '../schemas/common.js';
import { marketRecordSchema } from '../schemas/agents.js';
import { useMarketRecords, type MarketRecords } from '../market/records.js';
import { agentPassportAbi } from '../../evm/abis.js';
import { createEvmPublicClient, type EvmPublicClient } from '../../evm/clients.js';

export const AGENT_CARD_TYPES = ['CREATOR', 'EXECUTOR', 'UNKNOWN'] as const;

export const agentCardSchema = z
  .object({
    id: z.string().describe('The DID of the agent'),
    type: z.enum(AGENT_CARD_TYPES),
    capabilities: z.array(z.string()),
    tier: z.number().int().describe('1 bronze, 2 silver, 3 gold, 4 platinum'),
    issuer: z.string().describe('Address that minted the passport'),
    issuedAt: z.string().describe('ISO 8601 time of issue'),
    revoked: z.boolean(),
    metadataUri: z.string(),
    marketplace: marketRecordSchema
      .optional()
      .describe('The marketplace record (from the marketplace topic) of the Hedera account this address belongs to (alias or long-zero address); absent when this service keeps no marketplace'),
  })
  .meta({ id: 'AgentCard' });

const DID_PKH = /^did:pkh:eip155:(\d{1,18}):(0x[0-9a-fA-F]{40})$/;

/** Parses did:pkh:eip155:{chainId}:{address}; undefined for anything else. */
export function parseEvmDid(did: string): { chainId: number; address: Address } | undefined {
  const m = DID_PKH.exec(did);
  if (!m) return undefined;
  return { chainId: Number(m[1]), address: getAddress(m[2]!.toLowerCase()) };
}

export interface AgentCardEvm {
  client: EvmPublicClient;
  chainId: number;
  passportAddress: Address;
}

export interface AgentCardRoutesOptions {
  ctx: AppContext;
  /** Overrides the chain from ctx.config (EVM_RPC_URL, EVM_CHAIN_ID, PASSPORT_CONTRACT_ADDRESS). */
  evm?: AgentCardEvm;
}

function evmFromConfig(ctx: AppContext): AgentCardEvm | undefined {
  const c = ctx.config;
  if (!c.EVM_RPC_URL || !c.EVM_CHAIN_ID || !c.PASSPORT_CONTRACT_ADDRESS) return undefined;
  return {
    client: createEvmPublicClient({ rpcUrl: c.EVM_RPC_URL, chainId: c.EVM_CHAIN_ID, retryCount: 1 }),
    chainId: c.EVM_CHAIN_ID,
    passportAddress: getAddress(c.PASSPORT_CONTRACT_ADDRESS.toLowerCase()),
  };
}

/** Address -> Hedera DID answers kept per process (an account's EVM address never changes); bounded. */
const LEDGER_DIDS_MAX = 10_000;

/**
 * The marketplace record of a card: tasks are posted and claimed by Hedera DIDs, so the record is
 * that of the Hedera account the card's address belongs to (the mirror resolves an EVM address, alias
 * or long-zero, to its account), else that of the card's own DID (empty).
 */
function marketplaceOfCards(ctx: AppContext, records: MarketRecords) {
  const ledgerDids = new Map<string, string | null>();
  const ledgerDidOf = async (address: Address): Promise<string | null> => {
    const known = ledgerDids.get(address);
    if (known !== undefined) return known;
    const ledger = ctx.ledger;
    if (!ledger) return null;
    let did: string | null = null;
    try {
      const account = await ledger.mirror.getAccount(address);
      did = account && !account.deleted ? `did:hedera:${ledger.deployment.network}:${account.account}` : null;
    } catch {
      return null; // the mirror cannot answer now: the card's own record, and ask again next time
    }
    if (ledgerDids.size >= LEDGER_DIDS_MAX) ledgerDids.delete(ledgerDids.keys().next().value!);
    ledgerDids.set(address, did);
    return did;
  };
  return async (did: string, address: Address) => {
    try {
      await records.ready(5_000);
    } catch {
      throw new ApiError('service_unavailable', 'The marketplace records are still loading', { hint: 'Retry after 30 seconds' });
    }
    return records.viewOf((await ledgerDidOf(address)) ?? did);
  };
}

const agentCardRoutes: FastifyPluginAsyncZod<AgentCardRoutesOptions> = async (app, opts) => {
  const evm = opts.evm ?? evmFromConfig(opts.ctx);
  // the marketplace record of the card's DID, from memory (NOTIFY-fed), where the service keeps tasks
  const records = opts.ctx.sql ? useMarketRecords(app, opts.ctx.sql) : null;
  const marketplaceOf = records ? marketplaceOfCards(opts.ctx, records) : null;

  app.get(
    '/api/agent/:did/card',
    {
      schema: {
        tags: ['agents'],
        summary: 'Agent card of an EVM-backed DID (did:pkh:eip155:{chainId}:{address})',
        params: z.object({ did: z.string().min(1).max(200) }),
        response: { 200: agentCardSchema, ...errorResponses(404, 503) },
      },
    },
    async (request) => {
      const { did } = request.params;
      const parsed = parseEvmDid(did);
      if (!parsed) {
        throw new ApiError('agent_not_found', 'Not an EVM DID', {
          hint: 'Agent cards exist for DIDs of the form did:pkh:eip155:{chainId}:{address}',
        });
      }
      if (!evm) {
        throw new ApiError('agent_not_found', 'No EVM chain is configured for agent cards', {
          hint: 'The service has no passport contract configured',
        });
      }
      if (parsed.chainId !== evm.chainId) {
        throw new ApiError('agent_not_found', `No agent on chain ${parsed.chainId}`, {
          hint: `Agent cards are served for chain ${evm.chainId}: did:pkh:eip155:${evm.chainId}:{address}`,
        });
      }
      try {
        const tokenId = await evm.client.readContract({
          address: evm.passportAddress,
          abi: agentPassportAbi,
          functionName: 'tokenOfOwner',
          args: [parsed.address],
        });
        if (tokenId === 0n) {
          throw new ApiError('agent_not_found', 'No passport is held by this address', {
            hint: `Check the DID ${did} or request a passport`,
          });
        }
        const [agentType, capabilities, tier, issuer, issuedAt, revoked, metadataUri] = await evm.client.readContract({
          address: evm.passportAddress,
          abi: agentPassportAbi,
          functionName: 'getCard',
          args: [tokenId],
        });
        return {
          id: did,
          type: AGENT_CARD_TYPES[agentType] ?? 'UNKNOWN',
          capabilities: [...capabilities],
          tier,
          issuer,
          issuedAt: new Date(Number(issuedAt) * 1000).toISOString(),
          revoked,
          metadataUri,
          ...(marketplaceOf ? { marketplace: await marketplaceOf(did, parsed.address) } : {}),
        };
      } catch (err) {
        if (err instanceof ApiError) throw err;
        if (err instanceof BaseError && err.walk((e) => e instanceof ContractFunctionRevertedError)) {
          throw new ApiError('agent_not_found', 'No passport is held by this address', { hint: `Check the DID ${did}` });
        }
        request.log.warn({ err }, 'agent card: EVM read failed');
        throw new ApiError('service_unavailable', 'The EVM chain is not reachable', { hint: 'Retry after 30 seconds' });
      }
    },
  );
};

export default agentCardRoutes;
