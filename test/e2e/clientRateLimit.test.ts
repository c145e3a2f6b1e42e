// The client and the CLI wait out a busy service (issue 29 item 8), against a real API (PostgreSQL, a
// localnet for the signed read) whose rate limit is one request per 5 s window: a request over it is
// answered 429 with Retry-After and X-RateLimit-Reset; the client waits that long (one progress line
// per wait) and sends it again, within its bound; with no time to wait (bound 0, or a bound shorter
// than the reset) the 429 reaches the caller. The client is imported from this worktree's source.
import path from 'node:path';
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { AgentPassportClient, ApiRequestError } from '../../packages/client/src/index.js';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import type { TestAgent } from '../support/signing.js';

const root = path.join(import.meta.dirname, '..', '..');
const bin = path.join(root, 'packages', 'client', 'bin', 'agent-passport.mjs');
const WINDOW_MS = 5_000;

describe('waiting out 429 (client and CLI against a real app with a tiny rate limit)', () => {
  let stack: LedgerStack;
  let sql: Sql;
  let app: FastifyInstance;
  let base: string;
  let agent: TestAgent;

  beforeAll(async () => {
    stack = await startLedgerStack('ratewait');
    sql = createSql(inject('databaseUrl'), { max: 3 });
    app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: String(WINDOW_MS) }, { sql, ledger: stack.ledger });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    agent = stack.localnet.config.accounts.find((a) => a.keyType === 'ED25519')!;
  });
  afterAll(async () => {
    await app?.close();
    await sql?.end();
    await stack?.stop();
  });

  /** Uses up this address's window, with at least a second of it left, and answers the 429 the next request gets. */
  const exhaust = async () => {
    for (;;) {
      await (await fetch(`${base}/agents`)).arrayBuffer();
      const over = await fetch(`${base}/agents`);
      await over.arrayBuffer();
      if (over.status === 429 && Number(over.headers.get('retry-after')) >= 2) return over;
    }
  };

  it('the 429 says when: Retry-After and X-RateLimit-Reset', async () => {
    const over = await exhaust();
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(over.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
  });

  it('without time to wait (bound 0, or shorter than the reset) the caller gets the 429', async () => {
    for (const maxWaitMs of [0, 500]) {
      await exhaust();
      const lines: string[] = [];
      const c = new AgentPassportClient({ baseUrl: base, maxWaitMs, onProgress: (l) => lines.push(l) });
      const err = await c.agents().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiRequestError);
      expect((err as ApiRequestError).status).toBe(429);
      expect((err as ApiRequestError).body.code).toBe('rate_limit_exceeded');
      expect(lines).toEqual([]);
    }
  });

  it('the typed client waits until the reset, says so once, and gets the answer', async () => {
    await exhaust();
    const lines: string[] = [];
    const c = new AgentPassportClient({ baseUrl: base, onProgress: (l) => lines.push(l) });
    const page = await c.agents();
    expect(Array.isArray(page.agents)).toBe(true);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^GET \/agents: service busy \(429 rate_limit_exceeded, Retry-After \d+\); waiting \d+ s, then retrying/);
  });

  const cli = (args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [bin, '--url', base, '--deployment', stack.env.LOCALNET_CONFIG_PATH!, ...args],
        { cwd: root, env: { PATH: process.env.PATH ?? '', AGENT_PRIVATE_KEY: agent.privateKey, AGENT_ACCOUNT_ID: agent.accountId, AGENT_KEY_TYPE: agent.keyType, ...env }, timeout: 110_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  it('the CLI prints one line per wait and goes on: a signed read (challenge, then the read) past the limit', async () => {
    // `task show` signs: GET /auth/challenge uses the window, the read itself is over it (429), is
    // waited out and sent again with the same, still unused, challenge; the route then answers for itself
    const taskId = '00000000-0000-7000-8000-000000000029';
    const r = await cli(['task', 'show', taskId, '--json']);
    const waits = r.stderr.split('\n').filter((l) => l.includes('service busy'));
    expect(waits.length).toBeGreaterThanOrEqual(1);
    expect(waits.some((l) => l.startsWith(`GET /market/tasks/${taskId}: service busy (429 rate_limit_exceeded`))).toBe(true);
    // not the 429: the task read's own answer, after the signature verified
    expect(r.stderr).toContain('"status":404');
    expect(r.stderr).toContain('market_task_not_found');
    expect(r.stderr).not.toContain(agent.privateKey);

    // --max-wait 0: the 429 ends the command
    await exhaust();
    const impatient = await cli(['--max-wait', '0', 'task', 'show', taskId]);
    expect(impatient.code).toBe(1);
    expect(impatient.stderr).toContain('rate_limit_exceeded');
    expect(impatient.stderr).not.toContain('service busy');
  });
});
