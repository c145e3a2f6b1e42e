/**
 * The readiness status of this process (GET /health/ready): PostgreSQL and Temporal checked at most
 * once per READINESS_REFRESH_MS, whatever the request rate (issue 20 item 9). Every request is
 * answered from the last status while it is younger than that; an older status is refreshed by one
 * check at a time, which every request arriving meanwhile waits for. The probe is never rate-limited
 * (api/plugins/rateLimit.ts), so this is what bounds what it costs the database and Temporal.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.js';

/** How old an answered status may be. */
export const READINESS_REFRESH_MS = 1_000;
/** The longest one dependency's check may take before it counts as failed. */
const CHECK_TIMEOUT_MS = 2_000;

export type ReadinessChecks = Record<'postgres' | 'temporal', { ok: boolean }>;

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class Readiness {
  private last: { at: number; checks: ReadinessChecks } | undefined;
  private running: Promise<ReadinessChecks> | undefined;

  constructor(
    private readonly ctx: Pick<AppContext, 'sql' | 'temporal' | 'now'>,
    private readonly log: FastifyBaseLogger,
  ) {}

  private now(): number {
    return this.ctx.now?.().getTime() ?? Date.now();
  }

  /** The status, at most READINESS_REFRESH_MS old (the clock is the time a check started). */
  async status(): Promise<ReadinessChecks> {
    if (this.last && this.now() - this.last.at < READINESS_REFRESH_MS) return this.last.checks;
    this.running ??= this.check().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async check(): Promise<ReadinessChecks> {
    const at = this.now();
    const run = async (name: keyof ReadinessChecks, fn: () => Promise<unknown>): Promise<{ ok: boolean }> => {
      try {
        await withTimeout(fn(), CHECK_TIMEOUT_MS);
        return { ok: true };
      } catch (err) {
        // the raw error (hosts, users) goes to the log only, never into an answer
        this.log.warn({ dependency: name, err }, 'readiness check failed');
        return { ok: false };
      }
    };
    const { sql, temporal } = this.ctx;
    const [postgres, temporalCheck] = await Promise.all([
      run('postgres', async () => {
        if (!sql) throw new Error('not configured');
        await sql`select 1`;
      }),
      run('temporal', async () => {
        if (!temporal) throw new Error('not configured');
        const client = await temporal();
        await client.workflowService.getSystemInfo({});
      }),
    ]);
    const checks = { postgres, temporal: temporalCheck };
    this.last = { at, checks };
    return checks;
  }
}
