/** GET /events: indexed on-chain events of the passport and escrow contracts (SPEC 2 "Chain event", 6.3). */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Sql } from 'postgres';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorResponses, paginationQuery } from '../schemas/common.js';
import { CHAIN_EVENT_SOURCES, listEvents } from '../../db/queries/chainEvents.js';

const blockNumber = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const eventsQuerySchema = z
  .object({
    eventName: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be a Solidity event name such as PassportMinted')
      .optional()
      .describe('Event name, e.g. PassportMinted, TierUpgraded, TaskFunded'),
    source: z.enum(CHAIN_EVENT_SOURCES).optional().describe('Contract the event came from'),
    fromBlock: blockNumber.optional().describe('Lowest block number (inclusive)'),
    toBlock: blockNumber.optional().describe('Highest block number (inclusive)'),
    ...paginationQuery,
  })
  .strict();

export const chainEventSchema = z
  .object({
    blockNumber: z.number().int(),
    txHash: z.string(),
    eventName: z.string(),
    args: z.record(z.string(), z.unknown()).describe('Decoded event arguments; integers as decimal strings'),
    logIndex: z.number().int(),
    source: z.enum(CHAIN_EVENT_SOURCES),
  })
  .meta({ id: 'ChainEvent' });

export const eventsResponseSchema = z.object({
  events: z.array(chainEventSchema),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});

export interface EventsRoutesOptions {
  ctx: AppContext;
  /** Overrides ctx.sql. */
  sql?: Sql;
  /** Chain whose events are served; default ctx.config.EVM_CHAIN_ID (all chains when unset). */
  chainId?: number;
}

const eventsRoutes: FastifyPluginAsyncZod<EventsRoutesOptions> = async (app, opts) => {
  const chainId = opts.chainId ?? opts.ctx.config.EVM_CHAIN_ID;

  app.get(
    '/events',
    {
      schema: {
        tags: ['events'],
        summary: 'Indexed events of the passport and escrow contracts, ordered by block then log index',
        querystring: eventsQuerySchema,
        response: { 200: eventsResponseSchema, ...errorResponses(400, 500, 503) },
      },
    },
    async (request) => {
      const q = request.query;
      if (q.fromBlock !== undefined && q.toBlock !== undefined && q.fromBlock > q.toBlock) {
        throw new ApiError('invalid_request', 'fromBlock is greater than toBlock', {
          hint: `fromBlock (${q.fromBlock}) must be at most toBlock (${q.toBlock})`,
        });
      }
      const sql = opts.sql ?? opts.ctx.sql;
      if (!sql) throw new ApiError('service_unavailable', 'The event index is not available', { hint: 'Retry after 30 seconds' });
      const { events, total } = await listEvents(sql, {
        chainId,
        eventName: q.eventName,
        source: q.source,
        fromBlock: q.fromBlock,
        toBlock: q.toBlock,
        limit: q.limit,
        offset: q.offset,
      });
      return { events, total, limit: q.limit, offset: q.offset };
    },
  );
};

export default eventsRoutes;
