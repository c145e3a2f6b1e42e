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
import { loadPublicLedgerDeployment } from '../ledger/deployment.js';
import { publicLedgerClients, type PublicLedgerClients } from '../ledger/services.js';
import { mirrorAccountKeys, type AccountKeyResolver } from './auth/accountKeys.js';

/**
 * The API's ledger: the deployment's public part, an SDK client without an operator and the mirror
 * (ledger/services.ts publicLedgerClients), and the account key cache. The API holds no key of the
 * service (issue 26 item 9): every transaction it builds for a client is frozen with an explicit
 * transaction id and node and signed, if at all, by the client's own key in memory; the service's
 * signatures are the worker's.
 */
export interface LedgerContext extends PublicLedgerClients {
  keys: AccountKeyResolver;
}

/** The API's ledger context from its configuration (DeploymentError when the deployment file is missing or incomplete). */
export function apiLedgerContext(config: Config, opts: { keyCacheTtlMs?: number } = {}): LedgerContext {
  const clients = publicLedgerClients(loadPublicLedgerDeployment(config));
  return { ...clients, keys: mirrorAccountKeys(clients.mirror, opts.keyCacheTtlMs) };
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
