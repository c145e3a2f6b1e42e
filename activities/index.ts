/**
 * The activities object the worker registers: each group is built from its dependencies here so
 * workflows only ever see the activity interfaces. Groups whose dependencies are not configured
 * (no ledger deployment, no EVM RPC) are left out, and workflows needing them are not started.
 */
import type { Sql } from 'postgres';
import type { Client as HederaClient } from '@hashgraph/sdk';
import type { Config } from '../config/index.js';
import type { LedgerDeployment } from '../ledger/deployment.js';
import type { MirrorClient } from '../ledger/mirror.js';
import type { IdempotentSubmitter } from '../ledger/submit.js';
import { createPassportLedgerActivities } from './ledger/passports.js';
import { createPassportDbActivities } from './db/passports.js';
import { createA2aLedgerActivities } from './ledger/a2a.js';
import { createA2aDbActivities } from './db/a2a.js';
import { createDirectoryLedgerActivities } from './ledger/directory.js';
import { createAgentDbActivities } from './db/agents.js';
import { createEvmActivities } from './evm/index.js';
import { createMarketLedgerActivities } from './ledger/market.js';
import { createTaskDbActivities } from './db/tasks.js';
import { createDomainOwnershipActivities } from './web/domainOwnership.js';
import { createTaskVerifierActivities } from './web/taskVerifier.js';
import { createRegistryActivities } from './ledger/registry.js';
import { trustDnsServers, trustFetchOrigins } from '../config/index.js';

export interface LedgerActivityDeps {
  deployment: LedgerDeployment;
  client: HederaClient;
  mirror: MirrorClient;
  submitter: IdempotentSubmitter;
}

export interface ActivityDeps {
  config: Config;
  sql: Sql;
  ledger?: LedgerActivityDeps;
}

export function createActivities(deps: ActivityDeps) {
  const { config, sql, ledger } = deps;
  return {
    // passports: ledger writes and projections, only with a ledger deployment
    ...(ledger ? { ...createPassportLedgerActivities({ sql, ledger }), ...createPassportDbActivities({ sql }) } : {}),
    // agent directory: registration and rebuild, only with a ledger deployment
    ...(ledger ? { ...createDirectoryLedgerActivities({ sql, ledger }), ...createAgentDbActivities({ sql }) } : {}),
    // A2A messages: chunk submission and the inbox projection, only with a ledger deployment
    ...(ledger ? { ...createA2aLedgerActivities({ sql, ledger }), ...createA2aDbActivities({ sql, ledger }) } : {}),
    // marketplace tasks: escrow schedules, payouts, topic messages and the projection, only with a ledger deployment
    ...(ledger ? { ...createMarketLedgerActivities({ sql, ledger }), ...createTaskDbActivities({ sql }) } : {}),
    // sponsored registry registrations: the directory record paid by the operator, only with a ledger deployment
    ...(ledger ? createRegistryActivities({ sql, ledger }) : {}),
    // chain indexer, only with an EVM chain configured
    ...createEvmActivities({ config, sql }),
    // task result verifiers (none, sha256, json_schema, http through the SSRF guard)
    ...createTaskVerifierActivities({ allowPrivate: config.TRUST_ALLOW_PRIVATE }),
    // domain ownership challenges: DNS TXT and well-known checks (issue 11)
    ...createDomainOwnershipActivities({ sql, dnsServers: trustDnsServers(config), allowPrivate: config.TRUST_ALLOW_PRIVATE, fetchOrigins: trustFetchOrigins(config) }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
