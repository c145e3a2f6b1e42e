import type { Sql } from 'postgres';

/**
 * Domain trust, part 2 (SPEC 2 "Domain ownership challenge", 4.5; DESIGN.md sections 6 and 10).
 *
 * domain_challenges: one row per ownership challenge handed out by GET /api/trust/{domain}/challenge.
 * The domainOwnership workflow (id domain-challenge:{domain}:{token}) polls the DNS TXT record and
 * the well-known file and writes the outcome here: status pending -> verified (method, proof,
 * verified_at) or pending -> expired. A verified row stays verified: it is the proof that the
 * snapshots' domain_ownership reads (db/queries/domainOwnership.ts). Every change of a row
 * announces the domain on NOTIFY domain_ownership_changed (trigger, so every writer is covered)
 * so a process caching snapshots drops that domain's.
 *
 * trust_attestations: one row per attested snapshot hash (idempotency key of POST
 * /api/trust/{domain}/attest). The attest activity records the signed transaction (raw bytes, hash,
 * nonce) before it sends it (status sending) and the receipt after (confirmed: token id, block,
 * time), so a retried activity looks the recorded transaction up, or re-sends the very same bytes,
 * instead of signing a second one. The raw transaction is public (it goes on chain); no key is stored.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table domain_challenges (
      token            text primary key,
      domain           text not null,
      status           text not null default 'pending' check (status in ('pending', 'verified', 'expired')),
      method           text check (method in ('dns', 'well-known')),
      proof            text,
      verified_at      timestamptz,
      expires_at       timestamptz not null,
      checks           integer not null default 0,
      last_checked_at  timestamptz,
      last_result      text,
      created_at       timestamptz not null default now(),
      constraint domain_challenges_verified check ((status = 'verified') = (verified_at is not null and method is not null and proof is not null))
    );
    create index domain_challenges_domain on domain_challenges (domain, created_at desc);
    create index domain_challenges_verified on domain_challenges (domain, verified_at desc) where status = 'verified';

    create function domain_challenges_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('domain_ownership_changed', new.domain);
      return new;
    end
    $$;
    create trigger domain_challenges_changed after insert or update on domain_challenges
      for each row execute function domain_challenges_notify();

    create table trust_attestations (
      snapshot_hash     text primary key,
      domain            text not null,
      attested_by       text not null,
      chain_id          bigint not null,
      contract_address  text not null,
      status            text not null default 'pending' check (status in ('pending', 'sending', 'confirmed', 'failed')),
      tx_hash           text,
      raw_tx            text,
      nonce             bigint,
      token_id          numeric(78, 0),
      block_number      bigint,
      attested_at       timestamptz,
      error             text,
      snapshot          jsonb not null,
      created_at        timestamptz not null default now(),
      updated_at        timestamptz not null default now()
    );
    create index trust_attestations_domain on trust_attestations (domain, created_at desc);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    drop table if exists trust_attestations;
    drop trigger if exists domain_challenges_changed on domain_challenges;
    drop function if exists domain_challenges_notify();
    drop table if exists domain_challenges;
  `);
}
