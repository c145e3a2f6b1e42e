/**
 * Passports of one app (DESIGN 11 "Structure": api/passports/ is the feature's home): the one state
 * object the paid-request saga's flat functions take (claims.ts, issuance.ts, upgrade.ts), as the
 * marketplace's steps take `Market` (api/market/state.ts). Built once by the feature's plugin and
 * exposed as the Fastify decorator `app.passports`; the passport routes (api/routes/passports.ts,
 * api/routes/admin.ts) read it from there.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Sql } from 'postgres';
import type { AppContext, LedgerContext } from '../context.js';
import type { WorkflowSettings } from '../workflowSettings.js';
import { usePassportCache, type PassportCache } from './cache.js';
import { killPointHook, type KillPoint } from './killPoint.js';

export interface Passports {
  /** the app's context (the same object the other features get) */
  readonly ctx: AppContext;
  readonly sql: Sql;
  readonly ledger: LedgerContext;
  /** the ledger network and the passport collection of this deployment */
  readonly network: string;
  readonly tokenId: string;
  /** the app's workflow settings: the bounded wait, timings, workflow id scope */
  readonly settings: WorkflowSettings;
  /** the passports in memory (NOTIFY-fed), read by the passport routes */
  readonly cache: PassportCache;
  /** the one test hook of the saga: kills the process at a named point under test configuration, nothing otherwise */
  readonly killPoint: (point: KillPoint) => void;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The passports of this app (api/passports/state.ts); set when PostgreSQL and the ledger are configured. */
    passports: Passports;
  }
}

/** Decorates the app with its passports (`app.passports`). Needs PostgreSQL and the ledger in the context. */
export default fp(
  async function passportsFeature(app: FastifyInstance, { ctx }: { ctx: AppContext }) {
    const sql = ctx.sql!;
    const ledger = ctx.ledger!;
    const passports: Passports = {
      ctx,
      sql,
      ledger,
      network: ledger.deployment.network,
      tokenId: ledger.deployment.passportTokenId,
      settings: app.workflowSettings,
      cache: usePassportCache(app, sql),
      killPoint: killPointHook(ctx.config),
    };
    app.decorate('passports', passports);
  },
  { name: 'passports', decorators: { fastify: ['workflowSettings'] } },
);
