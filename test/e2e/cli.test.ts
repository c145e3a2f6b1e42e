// The agent-passport CLI run as a process, as a new user runs it: a key file for one agent and
// AGENT_PRIVATE_KEY for the other; a passport bought (paid in HBAR), a message sent and read, a task
// posted, claimed, delivered and completed with the claimer paid. Keys never show in any output.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPassportStack, upgradePassportTo, type PassportStack } from './passportHarness.js';
import type { TestAgent } from '../support/signing.js';

type Json = Record<string, any>;
const root = path.join(import.meta.dirname, '..', '..');
const bin = path.join(root, 'packages', 'client', 'bin', 'agent-passport.mjs');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('agent-passport CLI (a process against the real stack)', () => {
  let ps: PassportStack;
  let alice: TestAgent; // key file (JSON like an account of localnet.json)
  let bob: TestAgent; // AGENT_PRIVATE_KEY
  let keyFile: string;
  const outputs: string[] = [];

  /** Runs the CLI (asynchronously: the API answers from this process). */
  const cli = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [bin, '--url', ps.baseUrl, '--deployment', ps.stack.env.LOCALNET_CONFIG_PATH, ...args],
        { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 120_000 },
        (err, stdout, stderr) => {
          outputs.push(stdout, stderr);
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });
  const asAlice = (args: string[]) => cli(['--key-file', keyFile, ...args]);
  const asBob = (args: string[]) => cli(args, { AGENT_PRIVATE_KEY: bob.privateKey, AGENT_ACCOUNT_ID: bob.accountId, AGENT_KEY_TYPE: bob.keyType });
  const json = (r: Run): Json => {
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    ps = await startPassportStack('cli');
    await ps.startWorker();
    alice = ps.agents.find((x) => x.keyType === 'ED25519')!;
    bob = ps.agents.find((x) => x.keyType === 'ECDSA')!;
    keyFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cli-key-')), 'alice.json');
    fs.writeFileSync(keyFile, JSON.stringify({ accountId: alice.accountId, privateKey: alice.privateKey, keyType: alice.keyType }), { mode: 0o600 });
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('passport buy: pays in HBAR with progress on stderr, --json on stdout; did resolve reads it back', async () => {
    const before = (await ps.stack.ledger.mirror.getHbarBalance(alice.accountId))!;
    const r = await asAlice(['passport', 'buy', '--tier', 'bronze', '--json']);
    const p = json(r);
    expect(p).toMatchObject({ tier: 'bronze', tokenId: ps.stack.deployment.passportTokenId });
    expect(r.stderr).toContain('paying');
    expect((await ps.stack.ledger.mirror.getHbarBalance(alice.accountId))!).toBeLessThan(before);
    expect(json(await asBob(['passport', 'buy', '--json'])).tier).toBe('bronze');
    const doc = await cli(['did', 'resolve', alice.did]);
    expect(doc.code).toBe(0);
    expect(doc.stdout).toContain(alice.accountId);
    expect(json(await asAlice(['whoami', '--json']))).toEqual({ did: alice.did });
  });

  it('messages send (signed by the CLI) and messages inbox', async () => {
    const sent = json(await asAlice(['messages', 'send', bob.did, 'hello from the cli', '--json']));
    expect(sent).toMatchObject({ from: alice.did, to: bob.did, body: 'hello from the cli' });
    const inbox = json(await asBob(['messages', 'inbox', '--json']));
    expect((inbox.messages as Json[]).map((m) => m.body)).toContain('hello from the cli');
  });

  it('task post, claim, deliver, complete: the claimer is paid; post and cancel', async () => {
    // set-up: the marketplace is for gold and platinum passports (SPEC 2 trust ladder)
    for (const x of [alice, bob]) await upgradePassportTo(ps, x, 'gold');
    const posted = json(await asAlice(['task', 'post', '--title', 'cli lifecycle task', '--price', '2', '--json']));
    expect(posted.status).toBe('posted');
    const id = String(posted.taskId);
    expect(json(await asBob(['task', 'claim', id, '--json'])).status).toBe('claimed');
    expect(json(await asBob(['task', 'deliver', id, '--result', 'done', '--json'])).status).toBe('delivered');
    const before = (await ps.stack.ledger.mirror.getHbarBalance(bob.accountId))!;
    expect(json(await asAlice(['task', 'complete', id, '--json'])).status).toBe('completed');
    expect((await ps.stack.ledger.mirror.getHbarBalance(bob.accountId))!).toBeGreaterThan(before);
    const other = json(await asAlice(['task', 'post', '--title', 'cli task to cancel', '--price', '1', '--json']));
    expect(json(await asAlice(['task', 'cancel', String(other.taskId), '--json'])).status).toBe('cancelled');
  });

  it('errors: exit code 1 with the SPEC error body on stderr; a signing command without a key says so', async () => {
    const r = await cli(['trust', 'snapshot', 'cli-test.invalid']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('trust_domain_not_found');
    const noKey = await cli(['task', 'claim', 'x']);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/agent key/);
  });

  it('no output of any command contains a private key', () => {
    const all = outputs.join('\n');
    expect(all.length).toBeGreaterThan(0);
    for (const a of [alice, bob]) expect(all).not.toContain(a.privateKey);
  });
});
