/**
 * The activities object the worker registers: each group is built from its dependencies here so
 * workflows only ever see the activity interfaces. Groups whose dependencies are not configured
 * (no ledger deployment, no EVM RPC) are left out, and workflows needing them are not started.
 */
import type { Sql } from 'postgres';
import type { Config } from '../config/index.js';
import type { LedgerServices } from '../ledger/services.js';
import { createPassportLedgerActivities } from './ledger/passports.js';
import { createPassportDbActivities } from './db/passports.js';
import { createPaymentSettlementActivities } from './ledger/paymentSettlement.js';
import { createPaymentReconcilerActivities } from './db/paymentReconciler.js';
import { createA2aLedgerActivities } from './ledger/a2a.js';
import { createA2aDbActivities } from './db/a2a.js';
import { createDirectoryLedgerActivities } from './ledger/directory.js';
import { createAgentDbActivities } from './db/agents.js';
import { createEvmActivities } from './evm/index.js';
import { createMarketLedgerActivities } from './ledger/market.js';
import { createMarketDbActivities } from './db/market.js';
import { createEscrowReconcilerActivities } from './ledger/marketEscrowReconciler.js';
import { createDomainOwnershipActivities } from './web/domainOwnership.js';
import { createMarketVerifierActivities } from './web/marketVerifier.js';
import { createRegistryActivities } from './ledger/registry.js';
import { createStepAuthorisationActivities } from './db/stepAuthorisations.js';
import { createDirectoryProbeActivities } from './web/directoryProbe.js';
import { agentFetchOptions, trustDnsServers, trustFetchOrigins } from '../config/index.js';
import { publicKeyFromMirror, keyTypeOf } from '@agent-passport/core/keys';
import type { CardKey } from '../domain/agentCardSignature.js';
import type { ProbeOutcome } from '../workflows/contracts/directoryProbe.js';

export interface ActivityDeps {
  config: Config;
  sql: Sql;
  /** built by ledger/services.ts createLedgerServices */
  ledger?: LedgerServices;
  /** counts each directory probe by outcome (the worker passes telemetry/metrics.ts countDirectoryProbe) */
  onDirectoryProbe?: (outcome: ProbeOutcome) => void;
}

/** The account key of a DID as a card verifier takes it (the mirror's key; null for key lists and unknown accounts). */
function mirrorCardKey(ledger: LedgerServices) {
  return async (accountId: string): Promise<CardKey | null> => {
    const key = publicKeyFromMirror((await ledger.mirror.getAccount(accountId))?.key ?? null);
    return key ? { type: keyTypeOf(key), raw: key.toBytesRaw() } : null;
  };
}

export function createActivities(deps: ActivityDeps) {
  const { config, sql, ledger } = deps;
  return {
    // passports: ledger writes and projections, only with a ledger deployment
    ...(ledger ? { ...createPassportLedgerActivities({ sql, ledger }), ...createPassportDbActivities({ sql }) } : {}),
    // x402 settlement inside the passport workflows and the payment reconciler (issue 23)
    ...(ledger ? { ...createPaymentSettlementActivities({ sql, ledger }), ...createPaymentReconcilerActivities({ sql }) } : {}),
    // agent directory: registration and rebuild, only with a ledger deployment
    ...(ledger ? { ...createDirectoryLedgerActivities({ sql, ledger }), ...createAgentDbActivities({ sql }) } : {}),
    // A2A messages: chunk submission and the inbox projection, only with a ledger deployment
    ...(ledger ? { ...createA2aLedgerActivities({ sql, ledger }), ...createA2aDbActivities({ sql, ledger }) } : {}),
    // marketplace tasks: escrow schedules, payouts, topic messages and the projection, only with a ledger deployment
    ...(ledger ? { ...createMarketLedgerActivities({ sql, ledger }), ...createMarketDbActivities({ sql }) } : {}),
    // the escrow reconciler (issue 26 item 4): tasks whose workflow is closed, settled under their own keys
    ...(ledger
      ? createEscrowReconcilerActivities({
          sql,
          ledger,
          bounds: { graceMs: config.ESCROW_RECONCILE_GRACE_S * 1000, maxPerPass: config.ESCROW_RECONCILE_MAX, samplePerPass: config.ESCROW_RECONCILE_SAMPLE },
        })
      : {}),
    // sponsored registry registrations: the directory record paid by the operator, only with a ledger deployment
    ...(ledger ? createRegistryActivities({ sql, ledger }) : {}),
    // the directory's liveness probe (issue 29 item 6): agents' cards and endpoints, cards verified again
    ...(ledger
      ? createDirectoryProbeActivities({
          sql,
          network: ledger.deployment.network,
          bounds: { everyMs: config.DIRECTORY_PROBE_EVERY_S * 1000, batchMax: config.DIRECTORY_PROBE_BATCH, staleAfterMs: config.DIRECTORY_STALE_AFTER_S * 1000 },
          fetch: agentFetchOptions(config),
          accountKey: mirrorCardKey(ledger),
          ...(deps.onDirectoryProbe ? { onProbe: deps.onDirectoryProbe } : {}),
        })
      : {}),
    // one-time authorisations of money-moving workflow messages (issue 26 item 1)
    ...createStepAuthorisationActivities({ sql }),
    // chain indexer, only with an EVM chain configured
    ...createEvmActivities({ config, sql }),
    // task result verifiers (none, sha256, json_schema, http through the SSRF guard)
    ...createMarketVerifierActivities({ allowPrivate: config.TRUST_ALLOW_PRIVATE }),
    // domain ownership challenges handed out before issue 20 (their workflows): DNS TXT and well-known checks
    ...createDomainOwnershipActivities({ sql, dnsServers: trustDnsServers(config), allowPrivate: config.TRUST_ALLOW_PRIVATE, fetchOrigins: trustFetchOrigins(config), ownershipTtlMs: config.TRUST_OWNERSHIP_TTL_MS }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
