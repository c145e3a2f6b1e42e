/**
 * `npm run demo`: a walk through the agent-passport CLI against the stack `npm run dev` started.
 * Reads .data/localnet.json, picks two agent accounts without a passport, writes their keys to
 * key files (mode 600, in a temp directory, removed at the end) and runs, printing each command:
 * passport buy (x402, paid in localnet HBAR) and upgrade, did resolve, directory register, messages
 * send / inbox, and a task posted, claimed, delivered and completed. The Temporal UI
 * (http://localhost:8233) then shows the passport, A2A and task workflows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const deployment = path.resolve(process.env.LOCALNET_CONFIG_PATH ?? '.data/localnet.json');
const cfg = JSON.parse(fs.readFileSync(deployment, 'utf8'));
const api: string = process.env.AGENT_PASSPORT_URL ?? cfg.apiUrl ?? 'http://127.0.0.1:3000';
const bin = path.join(root, 'packages', 'client', 'bin', 'agent-passport.mjs');

type Agent = { accountId: string; did: string; keyType: 'ED25519' | 'ECDSA'; privateKey: string };

const free: Agent[] = [];
for (const a of cfg.accounts as Agent[]) {
  const owned = (await (await fetch(`${api}/passport/address/${a.accountId}`)).json()) as { passports?: unknown[] };
  if (!owned.passports?.length) free.push(a);
  if (free.length === 2) break;
}
if (free.length < 2) {
  console.log('fewer than two agent accounts without a passport; delete .data/ for a fresh localnet');
  process.exit(0);
}
const [alice, bob] = free;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-demo-'));
const keyFile = (a: Agent, name: string) => {
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ accountId: a.accountId, privateKey: a.privateKey, keyType: a.keyType }), { mode: 0o600 });
  return file;
};
const files = { alice: keyFile(alice, 'alice'), bob: keyFile(bob, 'bob') };

/** Runs `agent-passport` as `who`, shows the command line, prints and answers its output. */
function run(who: 'alice' | 'bob' | null, args: string[]): string {
  const full = ['--url', api, '--deployment', deployment, ...(who ? ['--key-file', files[who]] : []), ...args];
  console.log(`\n$ agent-passport ${who ? `--key-file ${who}.json ` : ''}${args.join(' ')}`);
  const out = execFileSync(process.execPath, [bin, ...full], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  process.stdout.write(out);
  return out;
}
const json = (out: string) => JSON.parse(out) as Record<string, any>;

try {
  console.log(`alice = ${alice.did} (${alice.keyType}), bob = ${bob.did} (${bob.keyType}); API ${api}`);
  const passport = json(run('alice', ['passport', 'buy', '--tier', 'bronze', '--endpoint', 'https://alice.example/a2a', '--json']));
  run('alice', ['passport', 'upgrade', passport.tokenId, String(passport.serialNumber), '--tier', 'silver']);
  run(null, ['did', 'resolve', alice.did]);
  // the marketplace is for gold and platinum passports (SPEC 2 trust ladder)
  run('alice', ['passport', 'upgrade', passport.tokenId, String(passport.serialNumber), '--tier', 'gold']);
  run('bob', ['passport', 'buy', '--tier', 'gold']);
  run('alice', ['directory', 'register', '--name', `demo-${alice.accountId}`, '--capability', 'api_call', '--endpoint', 'https://alice.example/a2a']);
  run('alice', ['messages', 'send', bob.did, 'hello bob: a task for you on the marketplace']);
  run('bob', ['messages', 'inbox', '--limit', '1']);
  const task = json(run('alice', ['task', 'post', '--title', 'Summarise the demo', '--price', '2', '--json']));
  run('bob', ['task', 'claim', task.taskId]);
  run('bob', ['task', 'deliver', task.taskId, '--result', 'The demo walked through the CLI.']);
  run('alice', ['task', 'complete', task.taskId]);
  console.log('\nTemporal UI: http://localhost:8233 shows the passport, A2A and task workflows.');
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
