/**
 * GET /events: indexed on-chain events of the passport and escrow contracts (SPEC 2 "Chain event", 6.3).
 *
 * Answers are kept in memory per query (serialised once) and dropped whenever the indexer writes or
 * rewinds events: db/queries/chainEvents.ts announces that with NOTIFY in the same transaction. The
 * memory is used only while the LISTEN connection stands (dropped when it is lost, rebuilt after).
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Sql } from 'postgres';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorResponses, paginationQuery } from '../schemas/common.js';
import { CHAIN_EVENT_SOURCES, listEvents } from '../../db/queries/chainEvents.js';
import { CHANNELS, listenChanges } from '../../db/notify.js';
import { sendJson, serializerFor } from '../serializer.js';

/** Most distinct queries kept at once (the memory starts over when full). */
const MAX_CACHED_QUERIES = 1_000;

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
  const serialize = serializerFor(eventsResponseSchema);
  const answers = new Map<string, string>();
  let live = false; // the LISTEN stands, so a change cannot go unnoticed
  let generation = 0; // bumped on every change: a query that straddles one is not kept
  const forget = () => {
    generation++;
    answers.clear();
  };
  const listenSql = opts.sql ?? opts.ctx.sql;
  if (listenSql) {
    const listener = await listenChanges(listenSql, CHANNELS.chainEvents, forget, () => {
      forget();
      live = true;
    }, {
      onLost: () => {
        live = false;
        forget();
      },
      onError: (err) => app.log.warn({ err }, 'events cache: LISTEN failed, retrying'),
    });
    app.addHook('onClose', () => listener.close());
  }

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
    async (request, reply) => {
      const q = request.query;
      if (q.fromBlock !== undefined && q.toBlock !== undefined && q.fromBlock > q.toBlock) {
        throw new ApiError('invalid_request', 'fromBlock is greater than toBlock', {
          hint: `fromBlock (${q.fromBlock}) must be at most toBlock (${q.toBlock})`,
        });
      }
      const sql = opts.sql ?? opts.ctx.sql;
      if (!sql) throw new ApiError('service_unavailable', 'The event index is not available', { hint: 'Retry after 30 seconds' });
      const key = `${q.eventName ?? ''}|${q.source ?? ''}|${q.fromBlock ?? ''}|${q.toBlock ?? ''}|${q.limit}|${q.offset}`;
      const hit = live ? answers.get(key) : undefined;
      if (hit !== undefined) return sendJson(reply, hit);
      const startedAt = generation;
      const { events, total } = await listEvents(sql, {
        chainId,
        eventName: q.eventName,
        source: q.source,
        fromBlock: q.fromBlock,
        toBlock: q.toBlock,
        limit: q.limit,
        offset: q.offset,
      });
      const body = serialize({ events, total, limit: q.limit, offset: q.offset });
      if (live && startedAt === generation) {
        if (answers.size >= MAX_CACHED_QUERIES) answers.clear();
        answers.set(key, body);
      }
      return sendJson(reply, body);
    },
  );
};

export default eventsRoutes;
