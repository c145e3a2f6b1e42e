/**
 * What route plugins need from the outside world, built once by server.ts (or by a test) and
 * handed to buildApp. Everything beyond config is optional so a route group that does not need a
 * dependency can be tested without it; app.ts registers a group only when its dependencies exist.
 */
import type { Sql } from 'postgres';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Client as HederaClient } from '@hashgraph/sdk';
import type { Redis } from 'ioredis';
import type { Config } from '../config/index.js';
import type { LedgerDeployment } from '../ledger/deployment.js';
import type { MirrorClient } from '../ledger/mirror.js';
import type { AccountKeyResolver } from './auth/accountKeys.js';

export interface LedgerContext {
  deployment: LedgerDeployment;
  /** SDK client with the operator, for freezing transactions that callers sign in-process. */
  client: HederaClient;
  mirror: MirrorClient;
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
