import type { Sql } from 'postgres';

/**
 * The agent directory (SPEC 2 "Agent directory entry", 4.2; DESIGN.md section 10 "Directory"):
 * the projection of the directory topic the API processes load into memory.
 * - status 'pending' is the claim a POST /agents/register writes before it starts the
 *   agentRegistration workflow (unique DID and unique case-insensitive name, so two concurrent
 *   registrations cannot both pass); the workflow turns it into 'registered' (or deletes it when it
 *   fails). Only registered rows are served.
 * - active turns false when the agent's passport is revoked, and tier follows an upgrade (the
 *   trigger below, in the passport write's transaction, with NOTIFY agent_changed).
 * - directory_sequence is the directory topic message that registered the agent (the rebuild replays
 *   the topic in that order).
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table agents (
      did                          text primary key,
      network                      text not null,
      account_id                   text not null,
      token_id                     text not null,
      serial                       bigint not null,
      name                         text not null,
      capabilities                 jsonb not null default '[]'::jsonb,
      skills                       jsonb,
      endpoint                     text not null,
      description                  text,
      agent_card                   text,
      tier                         text not null check (tier in ('bronze', 'silver', 'gold', 'platinum')),
      registered_at                timestamptz,
      active                       boolean not null default true,
      status                       text not null check (status in ('pending', 'registered')),
      directory_sequence           bigint,
      directory_transaction_id     text,
      audit_transaction_id         text,
      workflow_id                  text,
      created_at                   timestamptz not null default now(),
      updated_at                   timestamptz not null default now()
    );
    create unique index agents_name_ci on agents (lower(name));
    create index agents_passport on agents (token_id, serial);
    create index agents_order on agents (directory_sequence, did);

    -- The directory follows its passports in the same transaction as the passport change, and
    -- announces each changed agent (NOTIFY agent_changed, payload the DID) so every API process
    -- updates its memory: a revoked passport turns its agents inactive, an upgrade changes their
    -- tier. A trigger rather than calls in the passport queries: every path that writes is covered.
    create function agents_follow_passport() returns trigger language plpgsql as $$
    declare
      d text;
    begin
      if new.revoked_at is not null and old.revoked_at is null then
        for d in update agents set active = false, updated_at = now()
                  where token_id = new.token_id and serial = new.serial and active
                  returning did
        loop
          perform pg_notify('agent_changed', d);
        end loop;
      end if;
      if new.tier is distinct from old.tier then
        for d in update agents set tier = new.tier, updated_at = now()
                  where token_id = new.token_id and serial = new.serial and tier is distinct from new.tier
                  returning did
        loop
          perform pg_notify('agent_changed', d);
        end loop;
      end if;
      return new;
    end
    $$;
    create trigger passports_changed_update_agents after update of revoked_at, tier on passports
      for each row execute function agents_follow_passport();
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    drop trigger if exists passports_changed_update_agents on passports;
    drop function if exists agents_follow_passport();
    drop table if exists agents;
  `);
}
