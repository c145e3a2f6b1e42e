/**
 * The catalogs against SPEC.md, row by row: the 30 error codes of section 7 with status and
 * recovery action (and `charge: never` where the spec says so), the trust ladder of section 2,
 * the tier prices of section 4.1.
 */
import { describe, expect, it } from 'vitest';
import { SPEC_ERRORS, SERVICE_ERRORS, RECOVERY_ACTIONS } from '../../domain/errors.js';
import { TRUST_LADDER } from '../../domain/trustLadder.js';
import { TIER_CATALOG, upgradePriceTinybars, capabilitiesOutsideTier } from '../../domain/tiers.js';
import { buildFeeCatalog, marketFeeTinybars } from '../../domain/fees.js';

// SPEC section 7, transcribed: code, HTTP status, recovery_action, charge never?
const SPEC_TABLE: Array<[string, number, string, boolean]> = [
  ['policy_refusal', 409, 'choose_alternative', true],
  ['insufficient_subject', 422, 'change_request', true],
  ['execution_failed', 502, 'retry_immediately', true],
  ['data_unavailable', 503, 'retry_immediately', true],
  ['passport_not_found', 404, 'choose_alternative', false],
  ['passport_not_owned', 403, 'not_authorized', false],
  ['passport_payment_required', 402, 'wait_and_retry', false],
  ['passport_payment_failed', 400, 'retry_immediately', false],
  ['passport_already_exists', 409, 'choose_alternative', false],
  ['passport_tier_invalid', 400, 'change_request', false],
  ['passport_upgrade_not_eligible', 400, 'change_request', false],
  ['agent_already_registered', 409, 'choose_alternative', false],
  ['agent_not_found', 404, 'change_request', false],
  ['agent_capability_invalid', 400, 'change_request', false],
  ['auth_challenge_expired', 401, 'retry_immediately', false],
  ['auth_signature_invalid', 401, 'change_request', false],
  ['auth_header_missing', 401, 'change_request', false],
  ['auth_did_unresolved', 401, 'change_request', false],
  ['market_task_not_found', 404, 'choose_alternative', false],
  ['market_task_already_claimed', 409, 'choose_alternative', false],
  ['market_task_not_claimed_by_agent', 403, 'change_request', false],
  ['a2a_recipient_not_found', 404, 'change_request', false],
  ['a2a_message_too_large', 413, 'change_request', false],
  ['agent_key_invalid', 401, 'change_request', false],
  ['agent_key_revoked', 401, 'choose_alternative', false],
  ['register_rate_limited', 429, 'wait_and_retry', false],
  ['sponsored_quota_exceeded', 429, 'wait_and_retry', false],
  ['rate_limit_exceeded', 429, 'wait_and_retry', false],
  ['internal_server_error', 500, 'retry_immediately', false],
  ['service_unavailable', 503, 'wait_and_retry', false],
];

describe('error catalog (SPEC section 7)', () => {
  it('has exactly the 30 codes of the spec, in order', () => {
    expect(SPEC_ERRORS.map((e) => e.code)).toEqual(SPEC_TABLE.map(([code]) => code));
  });

  it.each(SPEC_TABLE)('%s: status %i, %s, charge never = %s', (code, status, action, chargeNever) => {
    const entry = SPEC_ERRORS.find((e) => e.code === code)!;
    expect(entry.http_status).toBe(status);
    expect(entry.recovery_action).toBe(action);
    expect('charge' in entry ? entry.charge : undefined).toBe(chargeNever ? 'never' : undefined);
    expect(entry.agent_impact.length).toBeGreaterThan(10);
    expect(entry.hint_template.length).toBeGreaterThan(5);
    // Routes that return the code today ('*': any route); codes of features not built yet list none.
    for (const route of entry.affected_routes) expect(route).toMatch(/^(\*|\/\S*)$/);
  });

  it('service codes never shadow spec codes and use valid recovery actions', () => {
    const spec = new Set<string>(SPEC_ERRORS.map((e) => e.code));
    for (const e of SERVICE_ERRORS) {
      expect(spec.has(e.code)).toBe(false);
      expect(RECOVERY_ACTIONS).toContain(e.recovery_action);
    }
  });
});

describe('trust ladder (SPEC section 2)', () => {
  it('has the 7 entries with the spec levels in order', () => {
    expect(TRUST_LADDER.map((t) => [t.name, t.level])).toEqual([
      ['unverified', 0],
      ['observer', 0],
      ['did_verified', 1],
      ['passport_holder', 2],
      ['passport_verified', 3],
      ['marketplace_participant', 4],
      ['trusted_agent', 5],
    ]);
  });

  it('names the unlocked capabilities of the spec', () => {
    const unlocks = TRUST_LADDER.flatMap((t) => t.unlocks).join(' | ');
    for (const cap of ['keyed free tier', 'verified (gold and above)', 'marketplace (gold and above)', 'multi_agent (platinum)', 'governance (platinum)']) {
      expect(unlocks).toContain(cap);
    }
  });
});

describe('tier catalog (SPEC 4.1, DESIGN section 6)', () => {
  it('prices bronze 5, silver 25, gold 100, platinum 500 HBAR with growing capability sets', () => {
    expect(TIER_CATALOG.map((t) => [t.name, t.price])).toEqual([
      ['bronze', 5],
      ['silver', 25],
      ['gold', 100],
      ['platinum', 500],
    ]);
    expect(TIER_CATALOG[0].capabilities).toEqual(['api_call', 'data_consume']);
    expect(TIER_CATALOG[3].capabilities).toContain('orchestration');
  });

  it('charges the price difference for upgrades and refuses downgrades', () => {
    expect(upgradePriceTinybars('bronze', 'gold')).toBe(95n * 100_000_000n);
    expect(upgradePriceTinybars('gold', 'gold')).toBeNull();
    expect(upgradePriceTinybars('gold', 'silver')).toBeNull();
  });

  it('reports capabilities outside the tier', () => {
    expect(capabilitiesOutsideTier('bronze', ['api_call', 'payment'])).toEqual(['payment']);
  });
});

describe('fee catalog', () => {
  const fees = buildFeeCatalog({ network: 'testnet', marketFeeBps: 250 });
  it('lists passports, upgrades, the marketplace fee, scan, badge and x402 entries', () => {
    expect(fees.total_count).toBe(fees.fees.length);
    expect(new Set(fees.fees.map((f) => f.category))).toEqual(new Set(['passport', 'marketplace', 'scan_api', 'badge_api', 'x402']));
    expect(fees.fees.find((f) => f.service === 'passport_gold')?.price_hbar).toBe(100);
    expect(fees.fees.find((f) => f.service === 'passport_upgrade_silver_to_platinum')?.price_hbar).toBe(475);
    expect(fees.fees.find((f) => f.category === 'marketplace')?.unit).toBe('percentage');
  });
  it('computes the marketplace fee the payout uses', () => {
    expect(marketFeeTinybars(10n * 100_000_000n, 250)).toBe(25_000_000n);
  });
});

describe('codes routes return', () => {
  it('every ApiError code and errorBody code in api/ is in the catalog served at /api/meta/errors', async () => {
    const fs = await import('node:fs');
    const path = await import('node:path');
    const { isCatalogCode } = await import('../../domain/errors.js');
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    walk('api');
    const used = new Set<string>();
    for (const file of files) {
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:new ApiError|errorBody)\(\s*'([a-z0-9_]+)'/g)) used.add(m[1]);
    }
    expect(used.size).toBeGreaterThan(15);
    expect([...used].filter((code) => !isCatalogCode(code))).toEqual([]);
  });
});
