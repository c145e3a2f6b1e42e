/**
 * GET /audit/{tokenId}/{serial}: the audit events of one passport, read from the audit topic through
 * the mirror (SPEC 2 "Audit event", 6.2). Messages are versioned JSON ({ v: 1, type, did, tokenId,
 * serial, timestamp, tier | oldTier, newTier | reason }). The topic is read incrementally: this
 * process keeps the parsed events and asks the mirror only for messages after the last one it saw.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorResponses } from '../schemas/common.js';
import { auditEventSchema, auditResponseSchema, passportPathParams } from '../schemas/passports.js';
import { parsePassportIds } from '../passportViews.js';

type AuditEvent = z.infer<typeof auditEventSchema>;

const STRING_FIELDS = ['did', 'tokenId', 'tier', 'oldTier', 'newTier', 'reason'] as const;

/** Parses one topic message into an audit event; null for anything that is not one. */
export function parseAuditMessage(text: string, meta: { sequenceNumber: number; consensusTimestamp: string }): AuditEvent | null {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return null;
  }
  if (!m || typeof m !== 'object' || typeof (m as { type?: unknown }).type !== 'string') return null;
  const src = m as Record<string, unknown>;
  const ev: AuditEvent = { type: src.type as string };
  for (const f of STRING_FIELDS) if (typeof src[f] === 'string') ev[f] = src[f] as string;
  if (typeof src.serial === 'number' || (typeof src.serial === 'string' && /^\d+$/.test(src.serial))) ev.serial = Number(src.serial);
  if (typeof src.timestamp === 'number') ev.timestamp = src.timestamp;
  ev.sequenceNumber = meta.sequenceNumber;
  ev.consensusTimestamp = meta.consensusTimestamp;
  return ev;
}

const auditRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const ledger = ctx.ledger!;
  const topicId = ledger.deployment.topics.audit;
  let cursor = 0;
  const events: AuditEvent[] = [];
  let refreshing: Promise<void> | null = null;

  const refresh = () => {
    refreshing ??= (async () => {
      try {
        const { messages, nextAfterSequence } = await ledger.mirror.getJoinedTopicMessages(topicId, { afterSequence: cursor });
        for (const msg of messages) {
          const ev = parseAuditMessage(msg.text(), { sequenceNumber: msg.sequenceNumber, consensusTimestamp: msg.consensusTimestamp });
          if (ev) events.push(ev);
        }
        cursor = Math.max(cursor, nextAfterSequence);
      } finally {
        refreshing = null;
      }
    })();
    return refreshing;
  };

  app.get(
    '/audit/:tokenId/:serial',
    {
      schema: {
        tags: ['audit'],
        summary: 'Audit events of a passport from the audit topic (passport.issued, passport.upgraded, passport.revoked, ...)',
        params: passportPathParams,
        response: { 200: auditResponseSchema, ...errorResponses(400, 500, 503) },
      },
    },
    async (request) => {
      const ids = parsePassportIds(request.params.tokenId, request.params.serial);
      try {
        await refresh();
      } catch {
        throw new ApiError('service_unavailable', 'The ledger mirror is unavailable', { hint: 'Retry after 30 seconds' });
      }
      return { events: events.filter((e) => e.tokenId === ids.tokenId && e.serial === ids.serial) };
    },
  );
};

export default auditRoutes;
