import type { Sql } from 'postgres';

/**
 * Liveness and card verification of directory entries (issue 29 items 5 and 6; DESIGN.md section 12
 * "Standard faces"): written by the registration (card_verified, card_verification) and by the
 * directoryProbe workflow (probed_at, last_seen_at, online, stale, and the card's re-verification);
 * every write announces the DID on agent_changed as the other agent writes do.
 *   probed_at          the last probe (the next one is due DIRECTORY_PROBE_EVERY_S later); null: never
 *   last_seen_at       the last probe the agent's endpoint or card answered; null: never
 *   online             what the last probe found; null: not probed yet
 *   stale              not seen for DIRECTORY_STALE_AFTER_S (since its registration when never seen)
 *   card_verified      its A2A card carries a signature by the DID's account key
 *   card_verification  why (domain/agentCardSignature.ts CARD_VERIFICATION_REASONS); null: not checked
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    alter table agents
      add column probed_at timestamptz,
      add column last_seen_at timestamptz,
      add column online boolean,
      add column stale boolean not null default false,
      add column card_verified boolean not null default false,
      add column card_verification text;
    create index agents_probe_due on agents (network, probed_at nulls first) where status = 'registered' and active;
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    drop index if exists agents_probe_due;
    alter table agents drop column probed_at, drop column last_seen_at, drop column online, drop column stale,
      drop column card_verified, drop column card_verification;
  `);
}
