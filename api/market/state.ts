/**
 * The marketplace of one app (DESIGN 11 "Structure": api/market/ is the feature's home): the task
 * book in memory, the app's workflow settings (how long a route waits for a task step, as every
 * route waits for its workflow), the timings handed to new task workflows (tests shorten them), and
 * the sweep clocks of the posting caps. Built once by app.ts when
 * PostgreSQL and the ledger are there (the plugin `marketFeature`) and exposed as the Fastify decorator `app.market`; the
 * marketplace routes (api/routes/market/), search and the feed read it from there, and so do tests
 * (`ps.app.market.taskTimings`).
 *
 * The orchestration that uses it lives beside it: posting.ts (posting with its caps), steps.ts
 * (claim, deliver, cancel, increase-reward, complete, verify), updates.ts (running a task workflow's
 * Updates), signing.ts (ScheduleSigns signed by the poster's key), payment.ts (direct payment),
 * parties.ts (DIDs and passports), views.ts (the task as answered).
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Sql } from 'postgres';
import type { AppContext, LedgerContext } from '../context.js';
import type { TaskTimings, VerifyResult } from '../../workflows/contracts/taskLifecycle.js';
import { TaskBook } from './taskBook.js';
import type { WorkflowSettings } from '../workflowSettings.js';

export interface Market {
  /** the app's context (the same object the other route groups get) */
  readonly ctx: AppContext;
  readonly sql: Sql;
  readonly ledger: LedgerContext;
  readonly log: FastifyBaseLogger;
  /** the open tasks and the newest closed ones in memory (NOTIFY-fed; api/market/taskBook.ts); closed with the app */
  readonly book: TaskBook;
  /** the app's workflow settings (api/workflowSettings.ts): how long a route waits for a task step before answering 202 */
  readonly settings: WorkflowSettings;
  /** timings handed to new task workflows (tests use seconds) */
  taskTimings?: TaskTimings;
  /** the claim, review and funding windows of new tasks instead of MARKET_*_WINDOW_S and the poster's choice (tests use seconds) */
  windows?: { claimSeconds?: number; reviewSeconds?: number; fundingSeconds?: number };
  /** when this process last swept old posting rows and expired Idempotency-Keys (ms; at most once a minute each) */
  readonly sweptAt: { postings: number; idempotencyKeys: number };
  /**
   * The verify Update this process has in flight, per task: concurrent verifies share it, so a flood of
   * verifies arriving before the outcome is kept makes one workflow Update per instance, not one each
   * (each would be an Update in the task's history and take one of the workflow's few in-flight Update
   * places, which the parties' own steps need).
   */
  readonly verifiesInFlight: Map<string, Promise<VerifyResult>>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The marketplace of this app (api/market/state.ts); set when PostgreSQL and the ledger are configured. */
    market: Market;
  }
}

/**
 * The feature's plugin: decorates the app with its marketplace (`app.market`) and closes the task
 * book when the app closes. Needs PostgreSQL and the ledger in the context.
 */
export const marketFeature = fp(
  async function marketFeature(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
    const deps = { sql: ctx.sql!, ledger: ctx.ledger! };
    const market: Market = {
      ctx,
      sql: deps.sql,
      ledger: deps.ledger,
      log: app.log,
      book: new TaskBook(deps.sql, (err) => app.log.warn({ err }, 'task book: load failed, retrying'), ctx.config.MARKET_CLOSED_IN_MEMORY),
      settings: app.workflowSettings,
      sweptAt: { postings: 0, idempotencyKeys: 0 },
      verifiesInFlight: new Map(),
    };
    app.decorate('market', market);
    // load the tasks now, not on the first read: the first visitors after a start get the list, not a wait (or a 503)
    market.book.ready().catch(() => {});
    app.addHook('onClose', async () => {
      await market.book.close();
    });
  },
  { name: 'market', decorators: { fastify: ['workflowSettings'] } },
);
