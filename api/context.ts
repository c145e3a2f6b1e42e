/**
 * What route plugins need from the outside world, built once by server.ts (or by a test) and
 * handed to buildApp. Everything beyond config is optional so a route group that does not need a
 * dependency can be tested without it; app.ts registers a group only when its dependencies exist.
 */
import type { FastifyRequest } from 'fastify';
import type { Sql } from 'postgres';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type { Config } from '../config/index.js';
import type { LedgerClients } from '../ledger/services.js';
import type { AccountKeyResolver } from './auth/accountKeys.js';

/** The ledger clients (ledger/services.ts ledgerClients; the client freezes transactions callers sign in-process) and the account key cache. */
export interface LedgerContext extends LedgerClients {
  keys: AccountKeyResolver;
}

export interface AppContext {
  config: Config;
  sql?: Sql;
  /** Lazily connected: the API starts even while Temporal is still coming up. */
  temporal?: () => Promise<TemporalClient>;
  redis?: Redis;
  ledger?: LedgerContext;
  /** The clock of routes that count by time (registry caps, sponsored budget day); tests inject one. Default: new Date() */
  now?: () => Date;
}

/** The service's public origin: PUBLIC_BASE_URL, else the request's own scheme and host (links, issuer, feed). */
export function publicBase(ctx: AppContext, request: FastifyRequest): string {
  return (ctx.config.PUBLIC_BASE_URL ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '');
}
