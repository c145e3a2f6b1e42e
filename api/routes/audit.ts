/**
 * GET /audit/{tokenId}/{serial}?limit=&offset=: the audit events of one passport (SPEC 2 "Audit
 * event", 6.2) in topic order, paginated (limit default 20, max 100), read from the PostgreSQL
 * projection of the audit topic (db/migrations/0005_audit_events.ts), not from the topic.
 *
 * The projection is written by the publishing activity right after consensus and completed by the
 * catch-up reader (api/auditProjection.ts), which this route runs in the background when the app
 * starts and at most every CATCH_UP_EVERY_MS while requests come in. Only when a page holds an event
 * the reader has not seen yet (no consensus timestamp) does the request wait for one catch-up
 * (bounded); if the mirror does not answer, the page is served as the projection has it.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { errorResponses } from '../schemas/common.js';
import { auditQuerySchema, auditResponseSchema, passportPathParams } from '../schemas/passports.js';
import { parsePassportIds } from '../passportViews.js';
import { catchUpAuditTopic } from '../auditProjection.js';
import { listAuditEvents } from '../../db/queries/auditEvents.js';

/** Least time between two background catch-ups of one process. */
export const CATCH_UP_EVERY_MS = 10_000;
/** Longest a request waits for a catch-up that completes its page. */
const CATCH_UP_WAIT_MS = 3_000;

const auditRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const ledger = ctx.ledger!;
  const topicId = ledger.deployment.topics.audit;
  let running: Promise<unknown> | null = null;
  let lastRun = 0;
  let closed = false;

  const catchUp = (): Promise<unknown> => {
    if (closed) return Promise.resolve();
    running ??= catchUpAuditTopic(sql, ledger.mirror, topicId)
      .catch((err) => app.log.warn({ err }, 'audit projection: catch-up failed'))
      .finally(() => {
        running = null;
      });
    lastRun = Date.now();
    return running;
  };
  app.addHook('onReady', async () => {
    void catchUp();
  });
  app.addHook('onClose', async () => {
    closed = true;
    await running;
  });

  app.get(
    '/audit/:tokenId/:serial',
    {
      schema: {
        tags: ['audit'],
        summary: 'Audit events of a passport (passport.issued, passport.upgraded, passport.revoked, ...), in topic order, paginated',
        params: passportPathParams,
        querystring: auditQuerySchema,
        response: { 200: auditResponseSchema, ...errorResponses(400, 500, 503) },
      },
    },
    async (request) => {
      const ids = parsePassportIds(request.params.tokenId, request.params.serial);
      const { limit, offset } = request.query;
      const read = () => listAuditEvents(sql, { topicId, tokenId: ids.tokenId, serial: ids.serial, limit, offset });
      let page = await read();
      if (page.events.some((e) => !e.consensusTimestamp)) {
        const done = await Promise.race([catchUp().then(() => true), new Promise<boolean>((r) => setTimeout(r, CATCH_UP_WAIT_MS, false).unref())]);
        if (done) page = await read();
      } else if (Date.now() - lastRun > CATCH_UP_EVERY_MS) {
        void catchUp();
      }
      return { events: page.events, total: page.total, limit, offset };
    },
  );
};

export default auditRoutes;
