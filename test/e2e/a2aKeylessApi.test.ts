// The API holds no key to the money (issue 26 item 9). The real API entry (api/server.ts) runs as its
// own process with NODE_ENV=production, the production variables of its role and a deployment file
// without any key, and no HEDERA_OPERATOR_KEY or ESCROW_PRIVATE_KEY in its environment: it starts,
// serves, and the deprecated operator-paid POST /a2a/send goes out end to end, paid by the operator
// and signed by the worker (which holds the operator key); send-with-key goes out paid and signed by
// the sender. Given either key, a production API refuses to start, naming the variable and not its
// value. Judged on localnet's mirror (payer of each topic message, the sender's balance) and on the
// API's authorisation row the worker claimed.
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../scripts/lib/ports.js';
import { startChildProcess, type ChildWorker } from '../reliability/childWorker.js';
import { signChallenge, type TestAgent } from '../support/signing.js';
import { recordSecret } from '../support/secrets.js';
import { buyPassport, startPassportStack, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ed25519Hex = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('hex');

describe('a production API process without the operator key serves /a2a/send, signed by the worker (issue 26 item 9)', () => {
  const codecKey = randomBytes(32).toString('hex');
  let ps: PassportStack;
  let alice: TestAgent;
  let bob: TestAgent;
  let dir: string;
  let env: Record<string, string>;
  let api: ChildWorker | undefined;
  let url: string;

  const post = async (p: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  /** the three signature headers, over HTTP from the API process as any client gets them */
  const signIn = async (agent: TestAgent) => {
    const { challenge } = (await (await fetch(`${url}/auth/challenge?did=${encodeURIComponent(agent.did)}`)).json()) as { challenge: string };
    return { 'x-service-did': agent.did, 'x-service-challenge': challenge, 'x-service-signature': signChallenge(agent, challenge) };
  };

  beforeAll(async () => {
    ps = await startPassportStack('keyless', { codecKey });
    await ps.startWorker();
    [alice, bob] = ps.agents;
    for (const a of [alice!, bob!]) {
      const r = await buyPassport(ps, a, { tier: 'bronze' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    // the deployment as `npm run bootstrap:network` writes it for a public network: ids and URLs, no key
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyless-'));
    const full = JSON.parse(fs.readFileSync(ps.stack.env.LOCALNET_CONFIG_PATH!, 'utf8')) as Json;
    const { escrowPrivateKey: _e, accounts: _a, adminToken: _t, ...rest } = full;
    const deploymentFile = path.join(dir, 'deployment.json');
    fs.writeFileSync(deploymentFile, JSON.stringify({ ...rest, operator: { accountId: full.operator.accountId } }));
    expect(fs.readFileSync(deploymentFile, 'utf8')).not.toContain(full.operator.privateKey);

    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const adminToken = randomBytes(24).toString('base64url');
    recordSecret('keyless admin token', adminToken);
    env = {
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_BASE_URL: url,
      ADMIN_TOKEN_SHA256: createHash('sha256').update(adminToken).digest('hex'),
      PAYLOAD_CODEC_KEY: codecKey,
      DATABASE_URL: ps.databaseUrl,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: ps.t.taskQueue,
      WORKFLOW_ID_SCOPE: ps.state.workflowIdScope!,
      HEDERA_NETWORK: 'local',
      HEDERA_OPERATOR_ID: full.operator.accountId,
      HEDERA_MIRROR_URL: ps.stack.localnet.mirrorUrl,
      FACILITATOR_URL: ps.stack.localnet.facilitatorUrl!,
      LOCALNET_CONFIG_PATH: deploymentFile,
      TRUST_SIGNING_KEY: ed25519Hex(),
      TRUST_SIGNING_KEY_ID: 'keyless-trust',
      OAUTH_SIGNING_KEY: ed25519Hex(),
      OAUTH_SIGNING_KEY_ID: 'keyless-oauth',
      RATE_LIMIT_MAX: '100000',
      LOG_LEVEL: 'warn',
    };
    for (const k of ['TRUST_SIGNING_KEY', 'OAUTH_SIGNING_KEY'] as const) recordSecret(`keyless ${k}`, env[k]!);
    expect(Object.keys(env)).not.toContain('HEDERA_OPERATOR_KEY');
    expect(Object.keys(env)).not.toContain('ESCROW_PRIVATE_KEY');
    api = await startChildProcess({
      name: 'keyless-api',
      entry: path.join(root, 'api', 'server.ts'),
      env,
      ready: async () => (await fetch(`${url}/health`).catch(() => null))?.status === 200,
    });
  }, 300_000);
  afterAll(async () => {
    await api?.kill('SIGTERM');
    await ps?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the deprecated /a2a/send end to end: paid by the operator, signed by the worker, within the sender\'s budget; send-with-key paid by the sender', async () => {
    const operator = ps.stack.deployment.operator.accountId;
    const topicId = ps.stack.deployment.topics.a2a;
    const mirror = ps.stack.ledger.mirror;
    const aliceBefore = await mirror.getHbarBalance(alice.accountId);

    const r = await post('/a2a/send', { from: alice.did, to: bob.did, body: 'no key in the API' }, await signIn(alice));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ from: alice.did, to: bob.did, body: 'no key in the API', chunks: 1, topicId });
    expect(r.body.transactionId.startsWith(`${operator}@`)).toBe(true);
    // on the ledger: the operator paid; the sender's balance did not move
    const raw = await mirror.getTopicMessages(topicId);
    const sent = raw.find((m) => m.sequence_number === r.body.sequenceNumber);
    expect(sent?.payer_account_id).toBe(operator);
    expect(await mirror.getHbarBalance(alice.accountId)).toBe(aliceBefore);
    // the worker signed it under the API's one-time authorisation, which the message's own workflow used
    const rows = await ps.sql<{ caller_did: string; used: boolean }[]>`
      select caller_did, used_by is not null as used from step_authorisations where workflow_id = ${ps.workflowId(`a2a:${r.body.transactionId}`)} and message = 'a2aMessage'`;
    expect(rows).toEqual([{ caller_did: alice.did, used: true }]);
    // it reads back from the inbox, as any message
    const inbox = (await (await fetch(`${url}/a2a/inbox?did=${encodeURIComponent(bob.did)}`)).json()) as Json;
    expect(inbox.messages.map((m: Json) => m.id)).toContain(r.body.id);

    // the sender-paid route needs no key of the service either
    const own = await post('/a2a/send-with-key', { from: bob.did, to: alice.did, body: 'paid by me', senderPrivateKey: bob.privateKey });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.body.transactionId.startsWith(`${bob.accountId}@`)).toBe(true);
    const ownRaw = (await mirror.getTopicMessages(topicId)).find((m) => m.sequence_number === own.body.sequenceNumber);
    expect(ownRaw?.payer_account_id).toBe(bob.accountId);

    // the API process never saw the operator's key (its output neither)
    expect(api!.output()).not.toContain(ps.stack.deployment.operator.privateKey);
  });

  it('refuses to start in production with HEDERA_OPERATOR_KEY or ESCROW_PRIVATE_KEY, naming the variable and not its value', async () => {
    for (const [name, value] of [
      ['HEDERA_OPERATOR_KEY', ps.stack.deployment.operator.privateKey],
      ['ESCROW_PRIVATE_KEY', ps.stack.deployment.escrowPrivateKey],
    ] as const) {
      const port = await freePort();
      const refused = await startChildProcess({
        name: `keyless-api-${name}`,
        entry: path.join(root, 'api', 'server.ts'),
        env: { ...env, PORT: String(port), [name]: value },
        ready: async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200,
        readyTimeoutMs: 60_000,
      }).then(
        async (child) => ({ started: await child.kill('SIGTERM') }),
        (err: Error) => ({ error: err.message }),
      );
      expect('error' in refused ? refused.error : 'started', name).toMatch(new RegExp(`exited \\(1\\) before it was ready:[\\s\\S]*${name}: refused for the api`));
      expect('error' in refused ? refused.error : '').not.toContain(value);
    }
  });
});
