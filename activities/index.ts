/**
 * The activities object the worker registers: each group is built from its dependencies here so
 * workflows only ever see the activity interfaces.
 */
import type { Sql } from 'postgres';
import type { Config } from '../config/index.js';

export interface ActivityDeps {
  config: Config;
  sql: Sql;
}

export function createActivities(_deps: ActivityDeps) {
  return {};
}

export type Activities = ReturnType<typeof createActivities>;
