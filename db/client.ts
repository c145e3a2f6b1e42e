/** The PostgreSQL connection pool (the `postgres` package). One per process. */
import postgres, { type Sql } from 'postgres';

export type { Sql };

export function createSql(url: string, opts: { max?: number } = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    onnotice: () => {},
    // bigint columns come back as JS bigint; ids and amounts in tinybars need the full range.
    types: { bigint: postgres.BigInt },
    connection: { application_name: 'agent-passport' },
  });
}
