/**
 * What route plugins need from the outside world, built once by server.ts (or by a test) and
 * handed to buildApp. Everything beyond config is optional so a route group that does not need a
 * dependency can be tested without it.
 */
import type { Sql } from 'postgres';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type { Config } from '../config/index.js';

export interface AppContext {
  config: Config;
  sql?: Sql;
  /** Lazily connected: the API starts even while Temporal is still coming up. */
  temporal?: () => Promise<TemporalClient>;
  redis?: Redis;
}
